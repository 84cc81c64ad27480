//! Integer expressions and CPU / node set strings of the workload language.
//!
//! Models the small arithmetic a benchmark's build step does when it sizes a
//! workload for a machine (autonumabench's `preproc.awk` computing `NCPUS/2`
//! threads, `SIZE/THREADS` slices, `i/(THREADS/NNODES)` bindings): integer
//! literals with optional size or time units, variables, `+ - * / %`, unary
//! minus and parentheses, evaluated in 64-bit signed integers with C's
//! truncating division. Sets are the kernel's cpulist/nodelist syntax extended
//! with `node:EXPR`, `nodes:EXPR..EXPR`, `cpu:EXPR`, `cpus:EXPR..EXPR` items.
//!
//! Left out: floating point, comparisons and conditionals, functions, the
//! kernel's `0-7:2` stride form of cpulists. Errors are plain strings here;
//! [`crate::spec`] wraps them with the origin and the dotted field.

use numalab_topology::{CpuSet, Machine, NodeId};

/// Deepest nesting of parentheses and unary signs an expression may have.
const MAX_DEPTH: usize = 64;

/// What a field holds, which decides the units its expressions may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A plain number (count, index, node or CPU id). Any unit is accepted,
    /// so `"1GiB / 4KiB"` is a count of pages.
    Count,
    /// Bytes; time units are refused.
    Size,
    /// Nanoseconds; size units are refused.
    Time,
}

/// Unit suffixes: name, multiplier, dimension.
const UNITS: &[(&str, i64, DimTag)] = &[
    ("B", 1, DimTag::Size),
    ("KiB", 1 << 10, DimTag::Size),
    ("MiB", 1 << 20, DimTag::Size),
    ("GiB", 1 << 30, DimTag::Size),
    ("TiB", 1 << 40, DimTag::Size),
    ("ns", 1, DimTag::Time),
    ("us", 1_000, DimTag::Time),
    ("ms", 1_000_000, DimTag::Time),
    ("s", 1_000_000_000, DimTag::Time),
];

/// True when `name` is a unit suffix (and so cannot name a loop variable).
pub fn is_unit(name: &str) -> bool {
    UNITS.iter().any(|(u, _, _)| *u == name)
}

/// True when `name` is a valid variable name: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (truncating toward zero, as in C)
    Div,
    /// `%` (sign of the dividend, as in C)
    Rem,
}

/// A parsed integer expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// A literal, already multiplied by its unit.
    Lit {
        /// Value in bytes, ns or plain.
        value: i64,
        /// Dimension of the unit, if one was written.
        dim: Option<DimTag>,
    },
    /// A variable.
    Var(String),
    /// Unary minus.
    Neg(Box<Expr>),
    /// A binary operation.
    Bin(Op, Box<Expr>, Box<Expr>),
}

/// The dimension a literal's unit carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DimTag {
    /// A size unit (B, KiB, MiB, GiB, TiB).
    Size,
    /// A time unit (ns, us, ms, s).
    Time,
}

/// Variables in scope, innermost last.
#[derive(Clone, Debug, Default)]
pub struct Env {
    vars: Vec<(String, i64)>,
}

impl Env {
    /// An empty scope.
    pub fn new() -> Self {
        Self::default()
    }

    /// Binds `name` (shadowing any outer binding until [`Env::pop`]).
    pub fn push(&mut self, name: &str, value: i64) {
        self.vars.push((name.to_string(), value));
    }

    /// Drops the innermost binding.
    pub fn pop(&mut self) {
        self.vars.pop();
    }

    /// Value of `name`, innermost binding first.
    pub fn get(&self, name: &str) -> Option<i64> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }

    /// Names in scope, outermost first, without duplicates.
    pub fn names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for (n, _) in &self.vars {
            if !out.contains(&n.as_str()) {
                out.push(n);
            }
        }
        out
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(i64),
    Ident(String),
    Op(char),
    LParen,
    RParen,
}

fn tokenize(src: &str) -> Result<Vec<(usize, Tok)>, String> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let c = bytes[pos];
        let start = pos;
        if c.is_ascii_whitespace() {
            pos += 1;
        } else if c.is_ascii_digit() {
            let mut v: i64 = 0;
            while pos < bytes.len() && (bytes[pos].is_ascii_digit() || bytes[pos] == b'_') {
                if bytes[pos] != b'_' {
                    v = v
                        .checked_mul(10)
                        .and_then(|v| v.checked_add(i64::from(bytes[pos] - b'0')))
                        .ok_or_else(|| {
                            format!("number at column {} does not fit in 64 bits", start + 1)
                        })?;
                }
                pos += 1;
            }
            out.push((start, Tok::Num(v)));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while pos < bytes.len() && (bytes[pos].is_ascii_alphanumeric() || bytes[pos] == b'_') {
                pos += 1;
            }
            out.push((start, Tok::Ident(src[start..pos].to_string())));
        } else {
            let tok = match c {
                b'+' | b'-' | b'*' | b'/' | b'%' => Tok::Op(c as char),
                b'(' => Tok::LParen,
                b')' => Tok::RParen,
                _ => {
                    let ch = src[pos..].chars().next().unwrap_or('?');
                    return Err(format!("unexpected character '{ch}' at column {}", pos + 1));
                }
            };
            pos += 1;
            out.push((start, tok));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    src: &'a str,
    toks: Vec<(usize, Tok)>,
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(_, t)| t)
    }

    fn column(&self) -> usize {
        self.toks
            .get(self.pos)
            .map_or(self.src.len() + 1, |(c, _)| c + 1)
    }

    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!("nested more than {MAX_DEPTH} deep"));
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<Expr, String> {
        let mut lhs = self.term()?;
        while let Some(Tok::Op(c @ ('+' | '-'))) = self.peek() {
            let op = if *c == '+' { Op::Add } else { Op::Sub };
            self.pos += 1;
            let rhs = self.term()?;
            lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn term(&mut self) -> Result<Expr, String> {
        let mut lhs = self.unary()?;
        while let Some(Tok::Op(c @ ('*' | '/' | '%'))) = self.peek() {
            let op = match c {
                '*' => Op::Mul,
                '/' => Op::Div,
                _ => Op::Rem,
            };
            self.pos += 1;
            let rhs = self.unary()?;
            lhs = Expr::Bin(op, Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        match self.peek() {
            Some(Tok::Op('-')) => {
                self.pos += 1;
                self.enter()?;
                let e = self.unary()?;
                self.depth -= 1;
                Ok(Expr::Neg(Box::new(e)))
            }
            Some(Tok::Op('+')) => {
                self.pos += 1;
                self.enter()?;
                let e = self.unary()?;
                self.depth -= 1;
                Ok(e)
            }
            _ => self.atom(),
        }
    }

    fn atom(&mut self) -> Result<Expr, String> {
        let col = self.column();
        match self.toks.get(self.pos).map(|(_, t)| t.clone()) {
            Some(Tok::Num(v)) => {
                self.pos += 1;
                if let Some(Tok::Ident(u)) = self.peek() {
                    let Some(&(_, mult, dim)) = UNITS.iter().find(|(n, _, _)| n == u) else {
                        return Err(format!(
                            "unknown unit '{u}' at column {} (units: B, KiB, MiB, GiB, TiB, ns, us, ms, s)",
                            self.column()
                        ));
                    };
                    self.pos += 1;
                    let value = v.checked_mul(mult).ok_or_else(|| {
                        format!("literal at column {col} does not fit in 64 bits")
                    })?;
                    return Ok(Expr::Lit {
                        value,
                        dim: Some(dim),
                    });
                }
                Ok(Expr::Lit {
                    value: v,
                    dim: None,
                })
            }
            Some(Tok::Ident(name)) => {
                self.pos += 1;
                Ok(Expr::Var(name))
            }
            Some(Tok::LParen) => {
                self.pos += 1;
                self.enter()?;
                let e = self.expr()?;
                self.depth -= 1;
                if self.peek() != Some(&Tok::RParen) {
                    return Err(format!(
                        "expected ')' at column {} to close '(' at column {col}",
                        self.column()
                    ));
                }
                self.pos += 1;
                Ok(e)
            }
            Some(Tok::RParen) => Err(format!("unexpected ')' at column {col}")),
            Some(Tok::Op(c)) => Err(format!("unexpected '{c}' at column {col}")),
            None => Err("unexpected end of expression".to_string()),
        }
    }
}

/// Parses an expression.
pub fn parse(src: &str) -> Result<Expr, String> {
    let toks = tokenize(src)?;
    if toks.is_empty() {
        return Err("empty expression".to_string());
    }
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        depth: 0,
    };
    let e = p.expr()?;
    if p.pos < p.toks.len() {
        let what = match &p.toks[p.pos].1 {
            Tok::Num(v) => v.to_string(),
            Tok::Ident(s) => s.clone(),
            Tok::Op(c) => c.to_string(),
            Tok::LParen => "(".to_string(),
            Tok::RParen => ")".to_string(),
        };
        return Err(format!(
            "unexpected '{what}' at column {} (missing operator?)",
            p.column()
        ));
    }
    Ok(e)
}

impl Expr {
    /// Evaluates in `env` for a field of `kind`.
    pub fn eval(&self, env: &Env, kind: Kind) -> Result<i64, String> {
        match self {
            Expr::Lit { value, dim } => {
                match (kind, dim) {
                    (Kind::Size, Some(DimTag::Time)) => {
                        return Err("a time unit in a size field".to_string())
                    }
                    (Kind::Time, Some(DimTag::Size)) => {
                        return Err("a size unit in a time field".to_string())
                    }
                    _ => {}
                }
                Ok(*value)
            }
            Expr::Var(name) => env.get(name).ok_or_else(|| {
                format!(
                    "unknown variable `{name}` (defined here: {})",
                    env.names().join(", ")
                )
            }),
            Expr::Neg(e) => e
                .eval(env, kind)?
                .checked_neg()
                .ok_or_else(|| "overflows a 64-bit integer".to_string()),
            Expr::Bin(op, a, b) => {
                let a = a.eval(env, kind)?;
                let b = b.eval(env, kind)?;
                let r = match op {
                    Op::Add => a.checked_add(b),
                    Op::Sub => a.checked_sub(b),
                    Op::Mul => a.checked_mul(b),
                    Op::Div | Op::Rem if b == 0 => {
                        return Err(format!(
                            "division by zero ({a} {} 0)",
                            if *op == Op::Div { '/' } else { '%' }
                        ))
                    }
                    Op::Div => a.checked_div(b),
                    Op::Rem => a.checked_rem(b),
                };
                r.ok_or_else(|| "overflows a 64-bit integer".to_string())
            }
        }
    }
}

/// Parses and evaluates `src` in one step.
pub fn eval_str(src: &str, env: &Env, kind: Kind) -> Result<i64, String> {
    parse(src)?.eval(env, kind)
}

/// One item of a CPU set string.
#[derive(Clone, Debug, PartialEq, Eq)]
enum CpuItem {
    /// `all`
    All,
    /// `A` or `A-B` with literal ids (inclusive).
    Range(u64, u64),
    /// `cpu:EXPR`
    Cpu(Expr),
    /// `cpus:EXPR..EXPR` (half-open)
    Cpus(Expr, Expr),
    /// `node:EXPR`
    Node(Expr),
    /// `nodes:EXPR..EXPR` (half-open)
    Nodes(Expr, Expr),
}

/// One item of a node list string.
#[derive(Clone, Debug, PartialEq, Eq)]
enum NodeItem {
    /// `all`
    All,
    /// `A-B` with literal ids (inclusive).
    Range(u64, u64),
    /// `EXPR`
    One(Expr),
    /// `EXPR..EXPR` (half-open)
    Span(Expr, Expr),
}

/// Parses `A-B` where both sides are plain decimal numbers.
fn literal_range(item: &str) -> Option<(u64, u64)> {
    let (a, b) = item.split_once('-')?;
    let (a, b) = (a.trim(), b.trim());
    let plain = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    if plain(a) && plain(b) {
        Some((a.parse().ok()?, b.parse().ok()?))
    } else {
        None
    }
}

fn span(s: &str) -> Result<(Expr, Expr), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("'{s}' is not a range EXPR..EXPR"))?;
    Ok((parse(a)?, parse(b)?))
}

fn parse_cpu_items(s: &str) -> Result<Vec<CpuItem>, String> {
    let mut items = Vec::new();
    for item in s.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(format!("empty item in '{s}'"));
        }
        let parsed = if item == "all" {
            CpuItem::All
        } else if let Some(e) = item.strip_prefix("cpu:") {
            CpuItem::Cpu(parse(e).map_err(|m| format!("in '{item}': {m}"))?)
        } else if let Some(e) = item.strip_prefix("cpus:") {
            let (a, b) = span(e).map_err(|m| format!("in '{item}': {m}"))?;
            CpuItem::Cpus(a, b)
        } else if let Some(e) = item.strip_prefix("node:") {
            CpuItem::Node(parse(e).map_err(|m| format!("in '{item}': {m}"))?)
        } else if let Some(e) = item.strip_prefix("nodes:") {
            let (a, b) = span(e).map_err(|m| format!("in '{item}': {m}"))?;
            CpuItem::Nodes(a, b)
        } else if let Some((a, b)) = literal_range(item) {
            if b < a {
                return Err(format!("range '{item}' runs backwards"));
            }
            CpuItem::Range(a, b)
        } else if item.bytes().all(|c| c.is_ascii_digit()) {
            let v = item
                .parse()
                .map_err(|_| format!("CPU id '{item}' is too large"))?;
            CpuItem::Range(v, v)
        } else {
            return Err(format!(
                "'{item}' is not a CPU set item (all, 0-3, cpu:EXPR, cpus:EXPR..EXPR, node:EXPR, nodes:EXPR..EXPR)"
            ));
        };
        items.push(parsed);
    }
    Ok(items)
}

/// Checks the syntax of a CPU set string without evaluating it.
pub fn check_cpuset(s: &str) -> Result<(), String> {
    parse_cpu_items(s).map(|_| ())
}

fn node_id(v: i64, nnodes: usize) -> Result<NodeId, String> {
    if v < 0 || v as u64 >= nnodes as u64 {
        return Err(format!("node {v} does not exist (nodes are 0..{nnodes})"));
    }
    Ok(v as NodeId)
}

fn eval_span(
    a: &Expr,
    b: &Expr,
    env: &Env,
    limit: usize,
    what: &str,
) -> Result<(usize, usize), String> {
    let lo = a.eval(env, Kind::Count)?;
    let hi = b.eval(env, Kind::Count)?;
    if lo < 0 {
        return Err(format!("{what} range starts at {lo}, below 0"));
    }
    if hi > lo && hi as u64 > limit as u64 {
        return Err(format!(
            "{what} range {lo}..{hi} goes past {limit} ({what}s are 0..{limit})"
        ));
    }
    // An empty span (hi <= lo) selects nothing wherever it starts; clamp it
    // so a start past the limit cannot index out of range.
    let lo = (lo as u64).min(limit as u64) as usize;
    Ok((
        lo,
        (hi.max(0) as u64).min(limit as u64).max(lo as u64) as usize,
    ))
}

/// Evaluates a CPU set string on `machine`. `all` alone gives `None` (no
/// restriction); every CPU must exist. An empty result is an error.
pub fn eval_cpuset(s: &str, env: &Env, machine: &Machine) -> Result<Option<CpuSet>, String> {
    let items = parse_cpu_items(s)?;
    let ncpus = machine.nr_cpus();
    let nnodes = machine.nr_nodes();
    if items == [CpuItem::All] {
        return Ok(None);
    }
    let mut set = CpuSet::new();
    let add = |set: &mut CpuSet, c: u64| -> Result<(), String> {
        if c >= ncpus as u64 {
            return Err(format!("CPU {c} does not exist (CPUs are 0..{ncpus})"));
        }
        set.insert(c as usize);
        Ok(())
    };
    for item in &items {
        match item {
            CpuItem::All => set = set.or(&machine.all_cpus()),
            CpuItem::Range(a, b) => {
                if *b >= ncpus as u64 {
                    return Err(format!("CPU {b} does not exist (CPUs are 0..{ncpus})"));
                }
                for c in *a..=*b {
                    add(&mut set, c)?;
                }
            }
            CpuItem::Cpu(e) => {
                let v = e.eval(env, Kind::Count)?;
                if v < 0 {
                    return Err(format!("CPU {v} does not exist (CPUs are 0..{ncpus})"));
                }
                add(&mut set, v as u64)?;
            }
            CpuItem::Cpus(a, b) => {
                let (lo, hi) = eval_span(a, b, env, ncpus, "CPU")?;
                for c in lo..hi {
                    add(&mut set, c as u64)?;
                }
            }
            CpuItem::Node(e) => {
                let n = node_id(e.eval(env, Kind::Count)?, nnodes)?;
                set = set.or(&machine.nodes[n].cpus);
            }
            CpuItem::Nodes(a, b) => {
                let (lo, hi) = eval_span(a, b, env, nnodes, "node")?;
                for n in lo..hi {
                    set = set.or(&machine.nodes[n].cpus);
                }
            }
        }
    }
    if set.is_empty() {
        return Err("empty CPU set".to_string());
    }
    Ok(Some(set))
}

fn parse_node_items(s: &str) -> Result<Vec<NodeItem>, String> {
    let mut items = Vec::new();
    for item in s.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(format!("empty item in '{s}'"));
        }
        let parsed = if item == "all" {
            NodeItem::All
        } else if item.contains("..") {
            let (a, b) = span(item).map_err(|m| format!("in '{item}': {m}"))?;
            NodeItem::Span(a, b)
        } else if let Some((a, b)) = literal_range(item) {
            if b < a {
                return Err(format!("range '{item}' runs backwards"));
            }
            NodeItem::Range(a, b)
        } else {
            NodeItem::One(parse(item).map_err(|m| format!("in '{item}': {m}"))?)
        };
        items.push(parsed);
    }
    Ok(items)
}

/// Checks the syntax of a node list string without evaluating it.
pub fn check_nodes(s: &str) -> Result<(), String> {
    parse_node_items(s).map(|_| ())
}

/// Evaluates a node list string: ascending, without duplicates. Every node
/// must exist; the list may come out empty (the caller decides).
pub fn eval_nodes(s: &str, env: &Env, nnodes: usize) -> Result<Vec<NodeId>, String> {
    let items = parse_node_items(s)?;
    let mut mask = vec![false; nnodes];
    for item in &items {
        match item {
            NodeItem::All => mask.iter_mut().for_each(|m| *m = true),
            NodeItem::Range(a, b) => {
                if *b >= nnodes as u64 {
                    return Err(format!("node {b} does not exist (nodes are 0..{nnodes})"));
                }
                for n in *a..=*b {
                    mask[n as usize] = true;
                }
            }
            NodeItem::One(e) => mask[node_id(e.eval(env, Kind::Count)?, nnodes)?] = true,
            NodeItem::Span(a, b) => {
                let (lo, hi) = eval_span(a, b, env, nnodes, "node")?;
                for m in &mut mask[lo..hi] {
                    *m = true;
                }
            }
        }
    }
    Ok(mask
        .iter()
        .enumerate()
        .filter_map(|(n, &m)| m.then_some(n))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(s: &str) -> Result<i64, String> {
        let mut env = Env::new();
        env.push("ncpus", 320);
        env.push("nnodes", 4);
        env.push("i", 7);
        eval_str(s, &env, Kind::Count)
    }

    #[test]
    fn precedence_and_associativity_follow_c() {
        assert_eq!(ev("1 + 2 * 3"), Ok(7));
        assert_eq!(ev("(1 + 2) * 3"), Ok(9));
        assert_eq!(ev("10 - 3 - 2"), Ok(5));
        assert_eq!(ev("100 / 10 / 5"), Ok(2));
        assert_eq!(ev("7 % 4 * 2"), Ok(6));
        assert_eq!(ev("-3 + 5"), Ok(2));
        assert_eq!(ev("- -3"), Ok(3));
        assert_eq!(ev("2 * -3"), Ok(-6));
        assert_eq!(ev("-7 / 2"), Ok(-3));
        assert_eq!(ev("-7 % 2"), Ok(-1));
        assert_eq!(ev("ncpus / 2"), Ok(160));
        assert_eq!(ev("i / (ncpus / nnodes)"), Ok(0));
        assert_eq!(ev("(ncpus - 1 - i) / (ncpus / nnodes)"), Ok(3));
        assert_eq!(ev("1_000_000"), Ok(1_000_000));
    }

    #[test]
    fn units_multiply_and_are_checked_against_the_field() {
        assert_eq!(ev("3GiB"), Ok(3 << 30));
        assert_eq!(ev("3 GiB"), Ok(3 << 30));
        assert_eq!(ev("1TiB / 4KiB"), Ok(1 << 28));
        assert_eq!(ev("512B"), Ok(512));
        assert_eq!(ev("10s"), Ok(10_000_000_000));
        assert_eq!(ev("30us + 5ns"), Ok(30_005));
        assert_eq!(ev("2ms"), Ok(2_000_000));
        let env = Env::new();
        assert!(eval_str("3GiB", &env, Kind::Time)
            .unwrap_err()
            .contains("size unit"));
        assert!(eval_str("3s", &env, Kind::Size)
            .unwrap_err()
            .contains("time unit"));
        assert!(ev("3KB").unwrap_err().contains("unknown unit 'KB'"));
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert!(ev("1 / 0").unwrap_err().contains("division by zero"));
        assert!(ev("1 % (i - 7)").unwrap_err().contains("division by zero"));
        assert!(ev("foo + 1")
            .unwrap_err()
            .contains("unknown variable `foo`"));
        assert!(ev("foo").unwrap_err().contains("ncpus, nnodes, i"));
        assert!(ev("").unwrap_err().contains("empty"));
        assert!(ev("(1 + 2").unwrap_err().contains("expected ')'"));
        assert!(ev("1 + 2)").unwrap_err().contains("unexpected ')'"));
        assert!(ev("1 2").unwrap_err().contains("missing operator"));
        assert!(ev("1 $ 2")
            .unwrap_err()
            .contains("unexpected character '$'"));
        assert!(ev("* 2").unwrap_err().contains("unexpected '*'"));
        assert!(ev("99999999999999999999").unwrap_err().contains("64 bits"));
        assert!(ev("9223372036854775807 + 1")
            .unwrap_err()
            .contains("overflows"));
        assert!(ev("16777216TiB").unwrap_err().contains("64 bits"));
        let deep = format!("{}1{}", "(".repeat(100), ")".repeat(100));
        assert!(ev(&deep).unwrap_err().contains("nested"));
        assert!(ev(&"-".repeat(1000)).unwrap_err().contains("nested"));
    }

    #[test]
    fn identifiers_and_units() {
        assert!(is_identifier("k") && is_identifier("_a1") && !is_identifier("1a"));
        assert!(!is_identifier("") && !is_identifier("a-b"));
        assert!(is_unit("s") && is_unit("KiB") && !is_unit("k"));
    }

    #[test]
    fn node_lists_mix_literals_expressions_and_spans() {
        let mut env = Env::new();
        env.push("nnodes", 4);
        env.push("k", 2);
        assert_eq!(eval_nodes("all", &env, 4), Ok(vec![0, 1, 2, 3]));
        assert_eq!(eval_nodes("0-1,3", &env, 4), Ok(vec![0, 1, 3]));
        assert_eq!(eval_nodes("k", &env, 4), Ok(vec![2]));
        assert_eq!(eval_nodes("k + 1, 0", &env, 4), Ok(vec![0, 3]));
        assert_eq!(eval_nodes("nnodes/2..nnodes", &env, 4), Ok(vec![2, 3]));
        assert_eq!(eval_nodes("2..2", &env, 4), Ok(vec![]));
        assert_eq!(eval_nodes("(3-1)", &env, 4), Ok(vec![2]));
        assert!(eval_nodes("3-1", &env, 4)
            .unwrap_err()
            .contains("backwards"));
        assert!(eval_nodes("4", &env, 4)
            .unwrap_err()
            .contains("node 4 does not exist"));
        assert!(eval_nodes("0-9", &env, 4).unwrap_err().contains("node 9"));
        assert!(eval_nodes("0..5", &env, 4)
            .unwrap_err()
            .contains("goes past"));
        assert!(eval_nodes("-1", &env, 4).unwrap_err().contains("node -1"));
        assert!(eval_nodes("0,,1", &env, 4)
            .unwrap_err()
            .contains("empty item"));
    }
}
