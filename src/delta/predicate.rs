//! Row predicates for `deltabus delete --where` (and row filters): the comparisons `=`, `!=`,
//! `<>`, `<`, `<=`, `>`, `>=`; `IN (...)`, `IS [NOT] NULL`, `AND`, `OR`, `NOT` and parentheses
//! over columns (dotted paths into structs) and literals (numbers, 'strings', true, false, null).
//!
//! Evaluation is three-valued as in SQL: a comparison with null is unknown, and only rows for
//! which the predicate is true match. [`Expr::may_match_file`] decides from partition values
//! and file statistics whether a file can hold a matching row (false only when it provably
//! cannot); [`Expr::evaluate`] computes the match per row on Arrow data.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Datum, RecordBatch, Scalar, StringArray};
use arrow::compute::kernels::{boolean, cmp};
use arrow::datatypes::DataType as A;
use serde_json::Value;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// A literal.
#[derive(Debug, Clone, PartialEq)]
pub enum Lit {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
    Null,
}

/// A predicate expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Cmp { column: Vec<String>, op: Op, value: Lit },
    In { column: Vec<String>, values: Vec<Lit>, negated: bool },
    IsNull { column: Vec<String>, negated: bool },
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Lit(Lit),
    Op(Op),
    LParen,
    RParen,
    Comma,
}

impl std::fmt::Display for Tok {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tok::Ident(w) => write!(f, "`{w}`"),
            Tok::Lit(Lit::Str(v)) => write!(f, "the string '{v}'"),
            Tok::Lit(Lit::Int(v)) => write!(f, "the number {v}"),
            Tok::Lit(Lit::Float(v)) => write!(f, "the number {v}"),
            Tok::Lit(Lit::Bool(v)) => write!(f, "`{v}`"),
            Tok::Lit(Lit::Null) => f.write_str("`NULL`"),
            Tok::Op(op) => write!(f, "`{}`", op_symbol(*op)),
            Tok::LParen => f.write_str("`(`"),
            Tok::RParen => f.write_str("`)`"),
            Tok::Comma => f.write_str("`,`"),
        }
    }
}

fn op_symbol(op: Op) -> &'static str {
    match op {
        Op::Eq => "=",
        Op::Ne => "!=",
        Op::Lt => "<",
        Op::Le => "<=",
        Op::Gt => ">",
        Op::Ge => ">=",
    }
}

/// How a token found where another was expected reads in an error.
fn found(t: Option<Tok>) -> String {
    match t {
        None => "the end of the predicate".into(),
        Some(Tok::Ident(w))
            if ["like", "between", "ilike", "rlike", "regexp"].contains(&w.to_ascii_lowercase().as_str()) =>
        {
            format!("`{w}`, which deltabus does not support (use =, !=, <, <=, >, >=, IN, IS [NOT] NULL, AND, OR, NOT)")
        }
        Some(t) => t.to_string(),
    }
}

fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '(' => (out.push(Tok::LParen), i += 1).1,
            ')' => (out.push(Tok::RParen), i += 1).1,
            ',' => (out.push(Tok::Comma), i += 1).1,
            '=' => (out.push(Tok::Op(Op::Eq)), i += if chars.get(i + 1) == Some(&'=') { 2 } else { 1 }).1,
            '!' if chars.get(i + 1) == Some(&'=') => (out.push(Tok::Op(Op::Ne)), i += 2).1,
            '<' | '>' => {
                let next = chars.get(i + 1).copied();
                let (op, len) = match (c, next) {
                    ('<', Some('=')) => (Op::Le, 2),
                    ('<', Some('>')) => (Op::Ne, 2),
                    ('<', _) => (Op::Lt, 1),
                    (_, Some('=')) => (Op::Ge, 2),
                    _ => (Op::Gt, 1),
                };
                out.push(Tok::Op(op));
                i += len;
            }
            '\'' => {
                let mut text = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err("unterminated string literal".into()),
                        Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                            text.push('\'');
                            i += 2;
                        }
                        Some('\'') => {
                            i += 1;
                            break;
                        }
                        Some(ch) => {
                            text.push(*ch);
                            i += 1;
                        }
                    }
                }
                out.push(Tok::Lit(Lit::Str(text)));
            }
            '`' => {
                let end = chars[i + 1..].iter().position(|ch| *ch == '`').ok_or("unterminated `identifier`")?;
                out.push(Tok::Ident(chars[i + 1..i + 1 + end].iter().collect()));
                i += end + 2;
            }
            c if c.is_ascii_digit() || (c == '-' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())) => {
                let start = i;
                i += 1;
                while i < chars.len() && (chars[i].is_ascii_digit() || matches!(chars[i], '.' | 'e' | 'E')) {
                    i += 1;
                }
                let text: String = chars[start..i].iter().collect();
                let lit = match text.parse::<i64>() {
                    Ok(n) => Lit::Int(n),
                    Err(_) => Lit::Float(text.parse().map_err(|_| format!("bad number {text:?}"))?),
                };
                out.push(Tok::Lit(lit));
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || matches!(chars[i], '_' | '.')) {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                out.push(match word.to_ascii_lowercase().as_str() {
                    "true" => Tok::Lit(Lit::Bool(true)),
                    "false" => Tok::Lit(Lit::Bool(false)),
                    "null" => Tok::Lit(Lit::Null),
                    _ => Tok::Ident(word),
                });
            }
            other => return Err(format!("unexpected character {other:?}")),
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    /// Nesting (parentheses and NOT) at the current position.
    depth: usize,
}

/// Deepest nesting of parentheses and NOT a predicate may use: parsing, evaluation and drop
/// recurse per level, and a hostile predicate must get an error, not a stack overflow.
const MAX_DEPTH: usize = 100;

/// AND/OR chains are built as balanced trees (depth log2 of the terms), so long chains are
/// fine; this bounds the terms of one chain.
const MAX_TERMS: usize = 100_000;

/// Combines operands into a balanced tree of `make` nodes.
fn balanced(mut items: Vec<Expr>, make: fn(Box<Expr>, Box<Expr>) -> Expr) -> Expr {
    while items.len() > 1 {
        let mut next = Vec::with_capacity(items.len().div_ceil(2));
        let mut it = items.into_iter();
        while let Some(a) = it.next() {
            next.push(match it.next() {
                Some(b) => make(Box::new(a), Box::new(b)),
                None => a,
            });
        }
        items = next;
    }
    items.pop().unwrap_or(Expr::IsNull { column: Vec::new(), negated: true })
}

impl Parser {
    fn peek_word(&self, w: &str) -> bool {
        matches!(self.toks.get(self.pos), Some(Tok::Ident(x)) if x.eq_ignore_ascii_case(w))
    }
    fn eat_word(&mut self, w: &str) -> bool {
        let hit = self.peek_word(w);
        self.pos += usize::from(hit);
        hit
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }
    fn or(&mut self) -> Result<Expr, String> {
        let mut terms = vec![self.and()?];
        while self.eat_word("or") {
            terms.push(self.and()?);
            if terms.len() > MAX_TERMS {
                return Err(format!("more than {MAX_TERMS} terms in one OR chain"));
            }
        }
        Ok(balanced(terms, Expr::Or))
    }
    fn and(&mut self) -> Result<Expr, String> {
        let mut terms = vec![self.not()?];
        while self.eat_word("and") {
            terms.push(self.not()?);
            if terms.len() > MAX_TERMS {
                return Err(format!("more than {MAX_TERMS} terms in one AND chain"));
            }
        }
        Ok(balanced(terms, Expr::And))
    }
    fn nest(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!("nested more than {MAX_DEPTH} levels deep (parentheses and NOT)"));
        }
        Ok(())
    }
    fn not(&mut self) -> Result<Expr, String> {
        if self.eat_word("not") {
            self.nest()?;
            let inner = self.not()?;
            self.depth -= 1;
            return Ok(Expr::Not(Box::new(inner)));
        }
        self.atom()
    }
    fn atom(&mut self) -> Result<Expr, String> {
        match self.next() {
            Some(Tok::LParen) => {
                self.nest()?;
                let e = self.or()?;
                self.depth -= 1;
                match self.next() {
                    Some(Tok::RParen) => Ok(e),
                    _ => Err("missing )".into()),
                }
            }
            Some(Tok::Ident(name)) => {
                let column: Vec<String> = name.split('.').map(str::to_string).collect();
                if self.eat_word("is") {
                    let negated = self.eat_word("not");
                    if !self.eat_word("null") && !matches!(self.next(), Some(Tok::Lit(Lit::Null))) {
                        return Err(format!("expected NULL after {name} IS"));
                    }
                    return Ok(Expr::IsNull { column, negated });
                }
                let negated = self.eat_word("not");
                if self.eat_word("in") {
                    if self.next() != Some(Tok::LParen) {
                        return Err("expected ( after IN".into());
                    }
                    let mut values = Vec::new();
                    loop {
                        match self.next() {
                            Some(Tok::Lit(l)) => values.push(l),
                            other => return Err(format!("expected a literal in the IN list, found {}", found(other))),
                        }
                        match self.next() {
                            Some(Tok::Comma) => continue,
                            Some(Tok::RParen) => break,
                            _ => return Err("expected , or ) in IN list".into()),
                        }
                    }
                    return Ok(Expr::In { column, values, negated });
                }
                if negated {
                    return Err("NOT here must be followed by IN".into());
                }
                let op = match self.next() {
                    Some(Tok::Op(op)) => op,
                    other => return Err(format!("expected a comparison after {name}, found {}", found(other))),
                };
                match self.next() {
                    Some(Tok::Lit(value)) => Ok(Expr::Cmp { column, op, value }),
                    other => Err(format!("expected a literal after the comparison, found {}", found(other))),
                }
            }
            other => Err(format!("expected a column or (, found {}", found(other))),
        }
    }
}

/// Parses a predicate.
///
/// # Errors
/// A message pointing at what does not parse.
#[cfg_attr(feature = "internal-api", visibility::make(pub))]
pub(crate) fn parse(s: &str) -> Result<Expr, String> {
    let mut p = Parser { toks: tokenize(s)?, pos: 0, depth: 0 };
    let e = p.or()?;
    if p.pos < p.toks.len() {
        return Err(format!("unexpected {} after the predicate", found(Some(p.toks[p.pos].clone()))));
    }
    Ok(e)
}

impl Expr {
    /// The columns the predicate uses (top-level names).
    pub fn columns(&self) -> Vec<&str> {
        match self {
            Expr::Cmp { column, .. } | Expr::In { column, .. } | Expr::IsNull { column, .. } => {
                vec![column[0].as_str()]
            }
            Expr::And(a, b) | Expr::Or(a, b) => [a.columns(), b.columns()].concat(),
            Expr::Not(a) => a.columns(),
        }
    }

    /// Whether a file may contain a matching row, judged from its partition values (by
    /// physical name) and its `stats` JSON. `physical` maps a column path to its physical path.
    /// Unknown (missing stats, unsupported comparisons) means "may match".
    pub fn may_match_file(
        &self,
        partition: &dyn Fn(&str) -> Option<Option<String>>,
        stats: Option<&Value>,
        physical: &dyn Fn(&[String]) -> Vec<String>,
    ) -> bool {
        match self {
            Expr::And(a, b) => {
                a.may_match_file(partition, stats, physical) && b.may_match_file(partition, stats, physical)
            }
            Expr::Or(a, b) => {
                a.may_match_file(partition, stats, physical) || b.may_match_file(partition, stats, physical)
            }
            Expr::Not(_) => true,
            Expr::IsNull { column, negated } => {
                if column.len() == 1 {
                    if let Some(v) = partition(&column[0]) {
                        return v.is_none() != *negated;
                    }
                }
                let path = physical(column);
                let nulls = stats.and_then(|s| get_path(&s["nullCount"], &path)).and_then(Value::as_i64);
                let records = stats.and_then(|s| s["numRecords"].as_i64());
                match (nulls, records, negated) {
                    (Some(n), _, false) => n > 0,
                    (Some(n), Some(r), true) => n < r,
                    _ => true,
                }
            }
            Expr::Cmp { column, op, value } => {
                if column.len() == 1 {
                    if let Some(v) = partition(&column[0]) {
                        return match v {
                            None => false,
                            Some(text) => compare_text(&text, value).is_none_or(|ord| op_holds(*op, ord)),
                        };
                    }
                }
                let path = physical(column);
                let min = stats.and_then(|s| get_path(&s["minValues"], &path));
                let max = stats.and_then(|s| get_path(&s["maxValues"], &path));
                let (Some(min), Some(max)) = (min, max) else { return true };
                let (Some(lo), Some(hi)) = (compare_json(min, value), compare_json(max, value)) else { return true };
                use std::cmp::Ordering::*;
                match op {
                    Op::Eq => lo != Greater && hi != Less,
                    Op::Ne => !(lo == Equal && hi == Equal),
                    Op::Lt => lo == Less,
                    Op::Le => lo != Greater,
                    Op::Gt => hi == Greater,
                    Op::Ge => hi != Less,
                }
            }
            Expr::In { column, values, negated } => {
                if *negated {
                    return true;
                }
                values.iter().any(|v| {
                    Expr::Cmp { column: column.clone(), op: Op::Eq, value: v.clone() }
                        .may_match_file(partition, stats, physical)
                })
            }
        }
    }

    /// Evaluates the predicate on a batch in the table's logical schema. Null (unknown) results
    /// are false: only rows for which the predicate is true match.
    ///
    /// # Errors
    /// A message when a column is missing or a literal does not fit its column's type.
    pub fn evaluate(&self, batch: &RecordBatch) -> Result<BooleanArray, String> {
        let three = self.eval3(batch)?;
        Ok(three.iter().map(|v| Some(v == Some(true))).collect())
    }

    fn eval3(&self, batch: &RecordBatch) -> Result<BooleanArray, String> {
        let err = |e: arrow::error::ArrowError| e.to_string();
        Ok(match self {
            Expr::And(a, b) => boolean::and_kleene(&a.eval3(batch)?, &b.eval3(batch)?).map_err(err)?,
            Expr::Or(a, b) => boolean::or_kleene(&a.eval3(batch)?, &b.eval3(batch)?).map_err(err)?,
            Expr::Not(a) => boolean::not(&a.eval3(batch)?).map_err(err)?,
            Expr::IsNull { column, negated } => {
                let col = column_of(batch, column, None)?;
                if *negated {
                    boolean::is_not_null(&col).map_err(err)?
                } else {
                    boolean::is_null(&col).map_err(err)?
                }
            }
            Expr::Cmp { column, op, value } => {
                let mut col = column_of(batch, column, Some(value))?;
                // A fractional literal against an integer column compares numerically, as SQL
                // does (`id > 1.5`), instead of failing to fit the column's type.
                if matches!(value, Lit::Float(f) if f.fract() != 0.0) && col.data_type().is_integer() {
                    col = arrow::compute::cast(&col, &A::Float64).map_err(err)?;
                }
                let Some(lit) = literal_array(value, col.data_type())? else {
                    return Ok(BooleanArray::from(vec![None; batch.num_rows()]));
                };
                let lit = Scalar::new(lit);
                let l: &dyn Datum = &col;
                match op {
                    Op::Eq => cmp::eq(l, &lit),
                    Op::Ne => cmp::neq(l, &lit),
                    Op::Lt => cmp::lt(l, &lit),
                    Op::Le => cmp::lt_eq(l, &lit),
                    Op::Gt => cmp::gt(l, &lit),
                    Op::Ge => cmp::gt_eq(l, &lit),
                }
                .map_err(err)?
            }
            Expr::In { column, values, negated } => {
                let mut acc = BooleanArray::from(vec![Some(false); batch.num_rows()]);
                for v in values {
                    let eq = Expr::Cmp { column: column.clone(), op: Op::Eq, value: v.clone() }.eval3(batch)?;
                    acc = boolean::or_kleene(&acc, &eq).map_err(err)?;
                }
                if *negated {
                    boolean::not(&acc).map_err(err)?
                } else {
                    acc
                }
            }
        })
    }
}

/// The column at `path` (a path inside a variant column as the kind `lit` compares with).
fn column_of(batch: &RecordBatch, path: &[String], lit: Option<&Lit>) -> Result<ArrayRef, String> {
    let find =
        |fields: &arrow::datatypes::Fields, name: &str| fields.iter().position(|f| f.name().eq_ignore_ascii_case(name));
    let i = find(batch.schema().fields(), &path[0]).ok_or_else(|| format!("no column {:?}", path[0]))?;
    let mut col = batch.column(i).clone();
    for (k, name) in path.iter().enumerate().skip(1) {
        let s = col.as_struct_opt().ok_or_else(|| format!("{:?} is not a struct", path.join(".")))?;
        if super::arrow_schema::is_variant(s.fields()) {
            return Ok(super::predicate_variant::values_at(s, &path[k..], lit));
        }
        let j = find(s.fields(), name).ok_or_else(|| format!("no field {name:?} in {:?}", path.join(".")))?;
        col = s.column(j).clone();
    }
    Ok(col)
}

/// A one-element array holding the literal in the column's type (`None` for null).
fn literal_array(value: &Lit, t: &A) -> Result<Option<ArrayRef>, String> {
    let text = match value {
        Lit::Null => return Ok(None),
        Lit::Int(n) => n.to_string(),
        Lit::Float(f) => f.to_string(),
        Lit::Str(s) => s.clone(),
        Lit::Bool(b) => b.to_string(),
    };
    let one: ArrayRef = Arc::new(StringArray::from(vec![text.clone()]));
    let opts = arrow::compute::CastOptions { safe: false, ..Default::default() };
    arrow::compute::cast_with_options(&one, t, &opts)
        .map(Some)
        .map_err(|e| format!("{text:?} does not fit type {t}: {e}"))
}

fn get_path<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

fn op_holds(op: Op, ord: std::cmp::Ordering) -> bool {
    use std::cmp::Ordering::*;
    match op {
        Op::Eq => ord == Equal,
        Op::Ne => ord != Equal,
        Op::Lt => ord == Less,
        Op::Le => ord != Greater,
        Op::Gt => ord == Greater,
        Op::Ge => ord != Less,
    }
}

/// Compares a statistic (JSON) with a literal; `None` when not comparable.
fn compare_json(stat: &Value, lit: &Lit) -> Option<std::cmp::Ordering> {
    match (stat, lit) {
        (Value::Number(n), Lit::Int(i)) => match n.as_i64() {
            Some(s) => Some(s.cmp(i)),
            None => n.as_f64()?.partial_cmp(&(*i as f64)),
        },
        (Value::Number(n), Lit::Float(f)) => n.as_f64()?.partial_cmp(f),
        (Value::String(s), Lit::Str(l)) => compare_strings(s, l),
        _ => None,
    }
}

/// Strings compare as text, except dates/timestamps, which compare as instants when both parse.
fn compare_strings(a: &str, b: &str) -> Option<std::cmp::Ordering> {
    let ts = |s: &str| {
        chrono::DateTime::parse_from_rfc3339(s)
            .map(|d| d.timestamp_micros())
            .ok()
            .or_else(|| {
                chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
                    .ok()
                    .map(|d| d.and_utc().timestamp_micros())
            })
            .or_else(|| {
                chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f")
                    .ok()
                    .map(|d| d.and_utc().timestamp_micros())
            })
    };
    match (ts(a), ts(b)) {
        // A truncated max in stats is at most 999 µs below the real max: treat as unknown close by.
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        _ => Some(a.cmp(b)),
    }
}

/// Compares a partition value (text) with a literal.
fn compare_text(text: &str, lit: &Lit) -> Option<std::cmp::Ordering> {
    match lit {
        Lit::Int(i) => {
            text.parse::<i64>().ok().map(|v| v.cmp(i)).or_else(|| text.parse::<f64>().ok()?.partial_cmp(&(*i as f64)))
        }
        Lit::Float(f) => text.parse::<f64>().ok()?.partial_cmp(f),
        Lit::Str(s) => compare_strings(text, s),
        Lit::Bool(b) => text.parse::<bool>().ok().map(|v| v.cmp(b)),
        Lit::Null => None,
    }
}

impl Expr {
    /// [`Expr::may_match_file`] for a file of `snapshot`'s table: partition columns are looked
    /// up by physical name and statistics by physical path.
    pub fn may_match_in(
        &self,
        snapshot: &super::snapshot::Snapshot,
        partition_values: &super::actions::PartitionValues,
        stats: Option<&str>,
    ) -> bool {
        let mode = snapshot.column_mapping();
        let partition = |col: &str| -> Option<Option<String>> {
            let logical = snapshot.metadata.partition_columns.iter().find(|p| p.eq_ignore_ascii_case(col))?;
            let physical = snapshot.schema.field(logical).map_or(logical.as_str(), |f| f.physical_name(mode));
            Some(partition_values.get(physical).cloned().flatten().filter(|v| !v.is_empty()))
        };
        let physical_of = |path: &[String]| -> Vec<String> {
            let mut fields = &snapshot.schema.fields;
            let mut out = Vec::new();
            for name in path {
                let Some(f) = fields.iter().find(|f| f.name.eq_ignore_ascii_case(name)) else { return path.to_vec() };
                out.push(f.physical_name(mode).to_string());
                if let super::schema::DataType::Struct(s) = &f.data_type {
                    fields = &s.fields;
                }
            }
            out
        };
        let stats: Option<Value> = stats.and_then(|s| serde_json::from_str(s).ok());
        self.may_match_file(&partition, stats.as_ref(), &physical_of)
    }
}

#[cfg(test)]
mod tests;
