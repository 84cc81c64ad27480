//! Hostile edits of a TOML spec: the mutator.
//!
//! A spec is parsed into a `toml::Value`, a few random edits are applied to
//! its tree (or to its text, for what a tree cannot hold: duplicate keys and
//! tables, cut lines), and it is written back as TOML. Every choice comes
//! from the caller's seeded PRNG, so a seed names one mutated text.
//!
//! Left out: edits that make the text invalid UTF-8 (a `&str` cannot hold
//! it, and the loaders take `&str`), and grammar-aware generation of new
//! workloads (the structured property tests of numalab-workload do that).

use rand::seq::SliceRandom;
use rand::Rng;
use rand_pcg::Pcg64Mcg;
use toml::Value;

/// Which language a spec is in: workload strings are expressions, so they
/// also get expression edits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    /// A machine spec (numalab-topology).
    Machine,
    /// A workload spec (numalab-workload).
    Workload,
}

/// One step from a table or array to a child.
#[derive(Clone, Debug)]
enum Seg {
    Key(String),
    Idx(usize),
}

/// Floats a hostile user tries; TOML writes NaN and infinities as `nan`
/// and `inf`.
const FLOATS: &[f64] = &[
    0.0,
    -0.0,
    -1.0,
    1e-300,
    5e-324,
    1e-7,
    0.0000001,
    1e300,
    f64::MAX,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.5,
    1.0,
];

/// Integers a hostile user tries.
const INTS: &[i64] = &[
    0,
    -1,
    1,
    2,
    1000,
    1 << 20,
    1 << 31,
    1 << 40,
    i64::MAX,
    i64::MIN,
];

/// Strings that are not what any field wants.
const JUNK: &[&str] = &[
    "",
    " ",
    "-1",
    "0",
    "nan",
    "inf",
    "1e300",
    "9223372036854775807",
    "18446744073709551616",
    "\u{0}\u{ffff}\u{10ffff}\u{1d11e}",
    "all",
    "node:",
    "0-",
    "..",
    "1GiB * 1GiB",
    "1000000",
    "ncpus * ncpus * ncpus * ncpus",
];

/// Edits of an expression `e` of the workload language (counts, sizes,
/// times, CPU sets and node lists all use it).
fn expr_edit(e: &str, rng: &mut Pcg64Mcg) -> String {
    match rng.gen_range(0..16) {
        0 => format!("{e} * 1000000"),
        1 => format!("({e}) * ncpus * ncpus * ncpus"),
        2 => format!("{e} / 0"),
        3 => format!("-({e})"),
        4 => format!("{e} - ({e}) - 1"),
        5 => format!("{e} % 0"),
        6 => format!("({e}) * 9223372036854775807"),
        7 => {
            let depth = rng.gen_range(1..200);
            format!("{}{e}{}", "(".repeat(depth), ")".repeat(depth))
        }
        8 => format!("{e}("),
        9 => {
            // Swap one variable for another, or a number for a huge one.
            let vars = ["i", "n", "k", "p", "np", "ncpus", "nnodes", "seed", "0"];
            let from = vars.choose(rng).copied().unwrap_or("i");
            let to = vars.choose(rng).copied().unwrap_or("n");
            e.replacen(from, to, 1)
        }
        10 => {
            let mut cut = rng.gen_range(0..=e.len());
            while !e.is_char_boundary(cut) {
                cut -= 1;
            }
            e[..cut].to_string()
        }
        11 => format!("{e}, node:nnodes"),
        12 => format!("nodes:0..{e}"),
        13 => format!("cpu:{e} * 1000"),
        14 => e.replace(|c: char| c.is_ascii_digit(), "99999999999"),
        _ => format!("{e} + 1e-300"),
    }
}

/// A new value for a leaf `v`: a hostile number, string or a swapped type.
fn leaf_edit(v: &Value, lang: Lang, rng: &mut Pcg64Mcg) -> Value {
    // One time in eight, swap the type whatever the value was.
    if rng.gen_ratio(1, 8) {
        return match rng.gen_range(0..6) {
            0 => Value::Integer(*INTS.choose(rng).unwrap_or(&0)),
            1 => Value::Float(*FLOATS.choose(rng).unwrap_or(&0.0)),
            2 => Value::String(JUNK.choose(rng).copied().unwrap_or("").to_string()),
            3 => Value::Boolean(rng.gen()),
            4 => Value::Array(vec![v.clone(), v.clone()]),
            _ => Value::Table(toml::map::Map::new()),
        };
    }
    match v {
        Value::Integer(i) => match rng.gen_range(0..9) {
            // Plausible but unusual values reach the model; the rest test
            // the checks.
            6 => Value::Integer(i.saturating_add(1)),
            7 => Value::Integer(i.saturating_mul(rng.gen_range(2..16))),
            8 => Value::Integer(i / rng.gen_range(2..16)),
            0 => Value::Integer(-i),
            1 => Value::Integer(i.saturating_mul(1_000_000)),
            2 => Value::Float(*FLOATS.choose(rng).unwrap_or(&0.0)),
            3 => Value::String(i.to_string()),
            _ => Value::Integer(*INTS.choose(rng).unwrap_or(&0)),
        },
        Value::Float(f) => match rng.gen_range(0..9) {
            6 => Value::Float(f * rng.gen_range(1.5..100.0)),
            7 => Value::Float(f / rng.gen_range(1.5..100.0)),
            8 => Value::Float(f + 1.0),
            0 => Value::Float(-f),
            1 => Value::Float(f * 1e6),
            2 => Value::Float(f / 1e6),
            3 => Value::Integer(*INTS.choose(rng).unwrap_or(&0)),
            _ => Value::Float(*FLOATS.choose(rng).unwrap_or(&0.0)),
        },
        Value::String(s) => match rng.gen_range(0..8) {
            0 => Value::String(String::new()),
            1 => Value::String("x".repeat(rng.gen_range(1000..100_000))),
            2 => Value::String(JUNK.choose(rng).copied().unwrap_or("").to_string()),
            3 => Value::Integer(*INTS.choose(rng).unwrap_or(&0)),
            _ if lang == Lang::Workload => Value::String(expr_edit(s, rng)),
            _ => Value::String(format!("{s}{}", JUNK.choose(rng).copied().unwrap_or(""))),
        },
        Value::Boolean(b) => match rng.gen_range(0..3) {
            0 => Value::Boolean(!b),
            1 => Value::String("yes".into()),
            _ => Value::Integer(2),
        },
        Value::Datetime(_) | Value::Array(_) | Value::Table(_) => {
            Value::String(JUNK.choose(rng).copied().unwrap_or("").to_string())
        }
    }
}

/// Keys whose values count or repeat something: made huge on purpose.
const COUNT_KEYS: &[&str] = &[
    "count",
    "passes",
    "repeat",
    "accesses",
    "packages",
    "nodes_per_package",
    "cores_per_node",
    "threads_per_core",
    "llcs_per_node",
    "per_node_gib",
    "mem_gib",
    "size",
    "len",
    "duration",
    "compute",
    "sleep",
    "range",
];

/// Every path from the root to a node of the tree (the root excluded).
fn paths(v: &Value, at: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
    match v {
        Value::Table(t) => {
            for (k, c) in t {
                at.push(Seg::Key(k.clone()));
                out.push(at.clone());
                paths(c, at, out);
                at.pop();
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                at.push(Seg::Idx(i));
                out.push(at.clone());
                paths(c, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

fn get_mut<'a>(mut v: &'a mut Value, path: &[Seg]) -> Option<&'a mut Value> {
    for s in path {
        v = match (s, v) {
            (Seg::Key(k), Value::Table(t)) => t.get_mut(k)?,
            (Seg::Idx(i), Value::Array(a)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

/// One edit of the tree: a leaf changed, a key or element deleted or
/// duplicated, a container emptied, a count made huge.
fn tree_edit(root: &mut Value, lang: Lang, rng: &mut Pcg64Mcg) {
    let mut all = Vec::new();
    paths(root, &mut Vec::new(), &mut all);
    // Half the time, only paths that end in a key: else the elements of a
    // distance matrix or a `sources` list would get most of the edits.
    if rng.gen_ratio(1, 2) {
        let keyed: Vec<Vec<Seg>> = all
            .iter()
            .filter(|p| matches!(p.last(), Some(Seg::Key(_))))
            .cloned()
            .collect();
        if !keyed.is_empty() {
            all = keyed;
        }
    }
    let Some(path) = all.choose(rng).cloned() else {
        return;
    };
    let (last, parent_path) = match path.split_last() {
        Some(x) => x,
        None => return,
    };
    let Some(parent) = get_mut(root, parent_path) else {
        return;
    };
    match (parent, last) {
        (Value::Table(t), Seg::Key(k)) => match rng.gen_range(0..10) {
            0 => {
                t.remove(k);
            }
            1 => {
                // An unknown key beside a known one.
                if let Some(v) = t.get(k).cloned() {
                    t.insert(format!("{k}_extra"), v);
                }
            }
            2 if COUNT_KEYS.contains(&k.as_str()) => {
                let huge = match rng.gen_range(0..4) {
                    0 => Value::Integer(1 << rng.gen_range(20..63)),
                    1 => Value::String("1000000000".into()),
                    2 => Value::Float(1e300),
                    _ => Value::String(format!("ncpus * {}", 1u64 << rng.gen_range(10..40))),
                };
                t.insert(k.clone(), huge);
            }
            3 => {
                if let Some(c) = t.get_mut(k) {
                    match c {
                        Value::Table(inner) => inner.clear(),
                        Value::Array(a) => a.clear(),
                        other => *other = leaf_edit(other, lang, rng),
                    }
                }
            }
            _ => {
                if let Some(c) = t.get_mut(k) {
                    if matches!(c, Value::Table(_) | Value::Array(_)) {
                        // Containers: edit inside instead, most of the time.
                        if rng.gen_ratio(1, 4) {
                            *c = leaf_edit(c, lang, rng);
                        } else {
                            tree_edit(c, lang, rng);
                        }
                    } else {
                        *c = leaf_edit(c, lang, rng);
                    }
                }
            }
        },
        (Value::Array(a), Seg::Idx(i)) => {
            let i = *i;
            if i >= a.len() {
                return;
            }
            match rng.gen_range(0..6) {
                0 => {
                    a.remove(i);
                }
                1 => {
                    // Duplicate an element (a process, a thread, a node,
                    // a matrix row), sometimes many times.
                    let n = if rng.gen_ratio(1, 4) { 64 } else { 1 };
                    let v = a[i].clone();
                    for _ in 0..n {
                        a.insert(i, v.clone());
                    }
                }
                2 => a.reverse(),
                _ => {
                    let c = &mut a[i];
                    if matches!(c, Value::Table(_) | Value::Array(_)) {
                        tree_edit(c, lang, rng);
                    } else {
                        *c = leaf_edit(c, lang, rng);
                    }
                }
            }
        }
        _ => {}
    }
}

/// One edit of the text: what TOML trees cannot express (a duplicated key
/// or table header, a half line) or plain junk.
fn text_edit(text: &str, rng: &mut Pcg64Mcg) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        return "[".to_string();
    }
    let i = rng.gen_range(0..lines.len());
    match rng.gen_range(0..5) {
        0 => {
            lines.remove(i);
        }
        1 => {
            let l = lines[i].clone();
            lines.insert(i, l);
        }
        2 => {
            let l = &mut lines[i];
            let mut cut = rng.gen_range(0..=l.len());
            while !l.is_char_boundary(cut) {
                cut -= 1;
            }
            l.truncate(cut);
        }
        3 => {
            // Repeat a whole table header elsewhere.
            let headers: Vec<String> = lines
                .iter()
                .filter(|l| l.starts_with('['))
                .cloned()
                .collect();
            if let Some(h) = headers.choose(rng) {
                lines.insert(i, h.clone());
            }
        }
        _ => {
            let junk = ["= 1", "[", "]]", "x = ", "\"", "[[]]", "a.b.c = 1", "#"];
            lines.insert(i, junk.choose(rng).copied().unwrap_or("").to_string());
        }
    }
    lines.join("\n")
}

/// `edits` hostile edits of spec `text`, mostly on its TOML tree, some on
/// its text. Deterministic for a given PRNG state.
pub fn mutate(text: &str, lang: Lang, edits: usize, rng: &mut Pcg64Mcg) -> String {
    let mut text = text.to_string();
    for _ in 0..edits {
        if rng.gen_ratio(1, 6) {
            text = text_edit(&text, rng);
            continue;
        }
        let Ok(mut v) = text.parse::<toml::Table>().map(Value::Table) else {
            // Already broken TOML: only text edits apply.
            text = text_edit(&text, rng);
            continue;
        };
        tree_edit(&mut v, lang, rng);
        if let Ok(t) = toml::to_string(&v) {
            text = t;
        }
    }
    text
}

/// Factors of a plausible-looking but extreme edit of a number.
const FACTORS: &[f64] = &[
    1e-300, 1e-7, 1e-3, 0.1, 0.5, 0.9, 1.1, 2.0, 10.0, 1e3, 1e7, 1e300,
];

/// `edits` edits of the numbers only, keeping their sign and type: a
/// number scaled by a factor from tiny to huge, an integer moved by one or
/// scaled. These pass the type checks and reach the range checks and the
/// model (the first fuzzer's `node_gbps = 1e-300` is one).
pub fn mutate_numbers(text: &str, edits: usize, rng: &mut Pcg64Mcg) -> String {
    let Ok(mut v) = text.parse::<toml::Table>().map(Value::Table) else {
        return text.to_string();
    };
    let mut all = Vec::new();
    paths(&v, &mut Vec::new(), &mut all);
    all.retain(|p| {
        let mut x = v.clone();
        matches!(
            get_mut(&mut x, p),
            Some(Value::Integer(_) | Value::Float(_))
        )
    });
    for _ in 0..edits {
        let Some(p) = all.choose(rng) else {
            break;
        };
        let f = *FACTORS.choose(rng).unwrap_or(&2.0);
        match get_mut(&mut v, p) {
            Some(Value::Float(x)) => *x *= f,
            Some(Value::Integer(i)) => {
                *i = match rng.gen_range(0..4) {
                    0 => i.saturating_add(1),
                    1 => i.saturating_sub(1),
                    2 => i.saturating_mul(rng.gen_range(2..64)),
                    _ => *i / rng.gen_range(2..8),
                }
            }
            _ => {}
        }
    }
    toml::to_string(&v).unwrap_or_else(|_| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn same_seed_same_text_and_edits_change_it() {
        let text = numalab_topology::presets::preset_toml("tiny-2n").unwrap_or("");
        let a = mutate(text, Lang::Machine, 3, &mut Pcg64Mcg::seed_from_u64(7));
        let b = mutate(text, Lang::Machine, 3, &mut Pcg64Mcg::seed_from_u64(7));
        assert_eq!(a, b);
        let changed = (0..20)
            .filter(|&s| {
                let m = mutate(text, Lang::Machine, 1, &mut Pcg64Mcg::seed_from_u64(s));
                m.parse::<toml::Table>().ok() != text.parse::<toml::Table>().ok()
            })
            .count();
        assert!(changed >= 15, "only {changed} of 20 edits changed the spec");
    }
}
