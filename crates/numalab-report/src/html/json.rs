//! A JSON document (a record's resolved machine or workload spec) as
//! tables: one table of its scalar fields (nested objects flattened to
//! `a.b` names, short lists of scalars joined), a table per matrix (e.g.
//! the node distances) and per list of objects (nodes, links). Lists
//! longer than [`MAX_ROWS`] show their first rows and how many there are
//! (a 1024-CPU machine's CPU list says nothing a table of 1024 rows
//! would). Left out: a schema-aware layout; the spec's own crate owns
//! its meaning.

use super::{Block, Cell, Kind, Table};
use serde_json::Value;

/// Rows shown of a list; the rest are counted.
pub const MAX_ROWS: usize = 64;
/// Scalars of a list joined into one field.
const MAX_JOINED: usize = 32;

/// The tables of `v`, captioned under `title`.
pub fn json_blocks(v: &Value, title: &str) -> Vec<Block> {
    let Value::Object(_) = v else {
        return vec![Block::Pre(
            serde_json::to_string_pretty(v).unwrap_or_default(),
        )];
    };
    let mut fields = Vec::new();
    let mut tables = Vec::new();
    flatten("", v, &mut fields, &mut tables);
    let mut out = vec![Block::Table(Table {
        class: "fields".into(),
        caption: Some(title.to_string()),
        head: vec![vec![Cell::head("field"), Cell::head("value")]],
        rows: fields,
    })];
    out.extend(tables.into_iter().map(Block::Table));
    out
}

/// A scalar as shown.
fn scalar(v: &Value) -> Option<Cell> {
    match v {
        Value::Null => Some(Cell::new("null", Kind::Muted)),
        Value::Bool(b) => Some(Cell::new(b.to_string(), Kind::Text)),
        Value::Number(n) => Some(Cell::new(n.to_string(), Kind::Num)),
        Value::String(s) => Some(Cell::new(s.clone(), Kind::Text)),
        Value::Array(_) | Value::Object(_) => None,
    }
}

/// A value in one cell: a scalar, or compact JSON.
fn compact(v: &Value) -> Cell {
    scalar(v).unwrap_or_else(|| Cell::new(v.to_string(), Kind::Text))
}

/// Adds `v` (named `name`) to the field rows or, for a matrix or a list
/// of objects, as a table of its own.
fn flatten(name: &str, v: &Value, fields: &mut Vec<Vec<Cell>>, tables: &mut Vec<Table>) {
    let join = |k: &str| {
        if name.is_empty() {
            k.to_string()
        } else {
            format!("{name}.{k}")
        }
    };
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                flatten(&join(k), x, fields, tables);
            }
        }
        Value::Array(items) if items.iter().all(|x| scalar(x).is_some()) => {
            let shown: Vec<String> = items
                .iter()
                .take(MAX_JOINED)
                .filter_map(scalar)
                .map(|c| c.text)
                .collect();
            let mut text = shown.join(", ");
            if items.len() > MAX_JOINED {
                text.push_str(&format!(", ... ({} in all)", items.len()));
            }
            fields.push(vec![Cell::head(name), Cell::new(text, Kind::Text)]);
        }
        Value::Array(items) if items.iter().all(Value::is_array) => {
            tables.push(matrix(name, items));
        }
        Value::Array(items) if items.iter().all(Value::is_object) => {
            tables.push(objects(name, items));
        }
        Value::Array(_) => {
            fields.push(vec![Cell::head(name), compact(v)]);
        }
        s => {
            if let Some(c) = scalar(s) {
                fields.push(vec![Cell::head(name), c]);
            }
        }
    }
}

/// A list of lists as a matrix with row and column numbers.
fn matrix(name: &str, rows: &[Value]) -> Table {
    let cols = rows
        .iter()
        .filter_map(Value::as_array)
        .map(Vec::len)
        .max()
        .unwrap_or(0);
    let mut head = vec![Cell::head("")];
    head.extend((0..cols).map(|c| Cell::head(c.to_string())));
    let mut body: Vec<Vec<Cell>> = rows
        .iter()
        .take(MAX_ROWS)
        .enumerate()
        .map(|(i, r)| {
            let mut row = vec![Cell::head(i.to_string())];
            if let Some(r) = r.as_array() {
                row.extend(r.iter().map(compact));
            }
            row
        })
        .collect();
    more(&mut body, rows.len(), cols + 1);
    Table {
        class: "fields".into(),
        caption: Some(name.to_string()),
        head: vec![head],
        rows: body,
    }
}

/// A list of objects as a table with a column per key (in first-seen
/// order).
fn objects(name: &str, items: &[Value]) -> Table {
    let mut keys: Vec<&str> = Vec::new();
    for o in items.iter().filter_map(Value::as_object) {
        for k in o.keys() {
            if !keys.contains(&k.as_str()) {
                keys.push(k);
            }
        }
    }
    let head = vec![keys.iter().map(|k| Cell::head(*k)).collect()];
    let mut body: Vec<Vec<Cell>> = items
        .iter()
        .take(MAX_ROWS)
        .filter_map(Value::as_object)
        .map(|o| {
            keys.iter()
                .map(|k| o.get(*k).map_or(Cell::new("", Kind::Muted), compact))
                .collect()
        })
        .collect();
    more(&mut body, items.len(), keys.len());
    Table {
        class: "fields".into(),
        caption: Some(name.to_string()),
        head,
        rows: body,
    }
}

/// A last row saying how many rows were left out, if any.
fn more(body: &mut Vec<Vec<Cell>>, total: usize, width: usize) {
    if total > MAX_ROWS {
        body.push(vec![Cell::new(
            format!("... {} more ({total} in all)", total - MAX_ROWS),
            Kind::Muted,
        )
        .spanning(width.max(1))]);
    }
}
