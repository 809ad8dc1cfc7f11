//! Generated columns (`delta.generationExpression`): the date and time expressions deltabus
//! can compute, parsed from Spark SQL and evaluated on Arrow batches. Synchronous, no I/O.
//!
//! Contract:
//! - A partition spec `date(ts)`, `hour(ts)`, `year(ts)`, `month(ts)` or `day(ts)`, optionally
//!   `... as <name>`, becomes a generated column (default name `ts_date`, `ts_hour`, ...) with
//!   Spark's expression: `CAST(ts AS DATE)`, `date_format(ts, 'yyyy-MM-dd-HH')`, `YEAR(ts)`,
//!   `MONTH(ts)`, `DAY(ts)`.
//! - Expressions read back from a table: those forms (any case, backticked names), plus
//!   `date_format(ts, <f>)` for the patterns `yyyy`, `yyyy-MM`, `yyyy-MM-dd`, `yyyy-MM-dd-HH`,
//!   `HOUR(ts)`, `DAYOFMONTH(ts)` and `to_date(ts)`. Any other expression makes the table
//!   unwritable (a writer must compute every generated column).
//! - Evaluation is in UTC (Spark evaluates in its session time zone: set
//!   `spark.sql.session.timeZone=UTC` for Spark's writes to agree) over timestamp,
//!   timestamp_ntz and date sources; a null source gives null.
//! - [`apply`] fills a generated column's nulls and refuses a row whose given value differs
//!   from the expression's (null-safe comparison, as the protocol asks of writers).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Date32Array, Int32Array, RecordBatch, StringArray};
use arrow::compute::{cast, kernels::cmp::distinct};
use arrow::datatypes::{DataType as A, TimeUnit};
use chrono::{DateTime, Datelike, Timelike};

use crate::delta::schema::{DataType, PrimitiveType, StructField, StructType};
use crate::error::{Error, Result};

/// The metadata key of a generated column's expression.
pub(crate) const GENERATION_EXPRESSION: &str = "delta.generationExpression";

/// What a generated column computes from its source column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// The date (`CAST(ts AS DATE)`).
    Date,
    /// `date_format(ts, <pattern>)`: a string.
    Format(Pattern),
    Year,
    Month,
    Day,
    Hour,
}

/// The `date_format` patterns deltabus computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pattern {
    Y,
    Ym,
    Ymd,
    YmdH,
}

impl Pattern {
    fn spark(self) -> &'static str {
        match self {
            Pattern::Y => "yyyy",
            Pattern::Ym => "yyyy-MM",
            Pattern::Ymd => "yyyy-MM-dd",
            Pattern::YmdH => "yyyy-MM-dd-HH",
        }
    }
    fn chrono(self) -> &'static str {
        match self {
            Pattern::Y => "%Y",
            Pattern::Ym => "%Y-%m",
            Pattern::Ymd => "%Y-%m-%d",
            Pattern::YmdH => "%Y-%m-%d-%H",
        }
    }
}

/// A generation expression over one source column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Expr {
    pub part: Part,
    pub source: String,
}

/// One generated column of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Generated {
    pub column: String,
    pub expr: Expr,
}

fn quote(name: &str) -> String {
    if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !name.starts_with(|c: char| c.is_ascii_digit()) {
        name.to_string()
    } else {
        format!("`{}`", name.replace('`', "``"))
    }
}

impl Expr {
    /// The expression as Spark writes it.
    pub(crate) fn to_sql(&self) -> String {
        let s = quote(&self.source);
        match self.part {
            Part::Date => format!("CAST({s} AS DATE)"),
            Part::Format(p) => format!("date_format({s}, '{}')", p.spark()),
            Part::Year => format!("YEAR({s})"),
            Part::Month => format!("MONTH({s})"),
            Part::Day => format!("DAY({s})"),
            Part::Hour => format!("HOUR({s})"),
        }
    }

    /// The Delta type of the column.
    pub(crate) fn data_type(&self) -> DataType {
        DataType::Primitive(match self.part {
            Part::Date => PrimitiveType::Date,
            Part::Format(_) => PrimitiveType::String,
            _ => PrimitiveType::Integer,
        })
    }

    /// Parses a Spark generation expression of one of the supported forms.
    ///
    /// # Errors
    /// [`Error::Unsupported`] naming the expression.
    pub(crate) fn parse(sql: &str) -> Result<Expr> {
        let unsupported =
            || Error::unsupported(format!("generation expression `{sql}`, which deltabus cannot compute"));
        let text = sql.trim();
        let open = text.find('(').ok_or_else(unsupported)?;
        if !text.ends_with(')') {
            return Err(unsupported());
        }
        let func = text[..open].trim().to_ascii_lowercase();
        let inner = text[open + 1..text.len() - 1].trim();
        let (part, arg) = match func.as_str() {
            "cast" => {
                let lower = inner.to_ascii_lowercase();
                let at = lower.rfind(" as ").ok_or_else(unsupported)?;
                if lower[at + 4..].trim() != "date" {
                    return Err(unsupported());
                }
                (Part::Date, &inner[..at])
            }
            "to_date" => (Part::Date, inner),
            "date_format" => {
                let (arg, pattern) = inner.rsplit_once(',').ok_or_else(unsupported)?;
                let pattern = pattern.trim().trim_matches(|c| c == '\'' || c == '"');
                let p = [Pattern::Y, Pattern::Ym, Pattern::Ymd, Pattern::YmdH]
                    .into_iter()
                    .find(|p| p.spark() == pattern)
                    .ok_or_else(unsupported)?;
                (Part::Format(p), arg)
            }
            "year" => (Part::Year, inner),
            "month" => (Part::Month, inner),
            "day" | "dayofmonth" => (Part::Day, inner),
            "hour" => (Part::Hour, inner),
            _ => return Err(unsupported()),
        };
        let source = column_name(arg.trim()).ok_or_else(unsupported)?;
        Ok(Expr { part, source })
    }

    /// Computes the expression over the source column's values.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the source is not a timestamp or date column.
    pub(crate) fn evaluate(&self, source: &dyn Array) -> Result<ArrayRef> {
        let micros: Vec<Option<i64>> = match source.data_type() {
            A::Timestamp(_, _) => {
                let c = cast(source, &A::Timestamp(TimeUnit::Microsecond, None)).map_err(|e| self.bad(e))?;
                c.as_primitive::<arrow::datatypes::TimestampMicrosecondType>().iter().collect()
            }
            A::Date32 => source
                .as_primitive::<arrow::datatypes::Date32Type>()
                .iter()
                .map(|d| d.map(|d| i64::from(d) * 86_400_000_000))
                .collect(),
            other => {
                return Err(Error::InvalidArgument(format!(
                    "{}: column {:?} is {other}, not a timestamp or date",
                    self.to_sql(),
                    self.source
                )))
            }
        };
        let at = |m: i64| DateTime::from_timestamp_micros(m).map(|d| d.naive_utc());
        Ok(match self.part {
            Part::Date => Arc::new(Date32Array::from_iter(
                micros.iter().map(|m| m.map(|m| i32::try_from(m.div_euclid(86_400_000_000)).unwrap_or(i32::MAX))),
            )),
            Part::Format(p) => Arc::new(StringArray::from_iter(
                micros.iter().map(|m| m.and_then(at).map(|d| d.format(p.chrono()).to_string())),
            )),
            part => Arc::new(Int32Array::from_iter(micros.iter().map(|m| {
                m.and_then(at).map(|d| match part {
                    Part::Year => d.year(),
                    Part::Month => d.month() as i32,
                    Part::Day => d.day() as i32,
                    _ => d.hour() as i32,
                })
            }))),
        })
    }

    fn bad(&self, e: impl std::fmt::Display) -> Error {
        Error::InvalidArgument(format!("{}: {e}", self.to_sql()))
    }
}

/// `ts`, `` `ts` ``: a top-level column name.
fn column_name(s: &str) -> Option<String> {
    if let Some(q) = s.strip_prefix('`').and_then(|r| r.strip_suffix('`')) {
        return Some(q.replace("``", "`"));
    }
    (!s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_')).then(|| s.to_string())
}

/// A `partition_by` entry that derives its column: `date(ts)`, `hour(ts) as h`, ...
/// `None` for a plain column name.
///
/// # Errors
/// [`Error::InvalidArgument`] for a call that is not one of the derivations.
pub(crate) fn parse_partition_spec(spec: &str) -> Result<Option<Generated>> {
    let spec = spec.trim();
    if !spec.contains('(') {
        return Ok(None);
    }
    let lower = spec.to_ascii_lowercase();
    let (call, name) = match lower.rfind(") as ") {
        Some(at) => (&spec[..=at], Some(spec[at + 5..].trim())),
        None => (spec, None),
    };
    let bad = || {
        Error::InvalidArgument(format!(
            "partition_by {spec:?}: expected a column, or date(ts), hour(ts), year(ts), month(ts), day(ts) [as name]"
        ))
    };
    let open = call.find('(').ok_or_else(bad)?;
    let func = call[..open].trim().to_ascii_lowercase();
    let arg = call[open + 1..].trim_end().strip_suffix(')').ok_or_else(bad)?.trim();
    let source = column_name(arg).ok_or_else(bad)?;
    let (part, suffix) = match func.as_str() {
        "date" => (Part::Date, "date"),
        "hour" => (Part::Format(Pattern::YmdH), "hour"),
        "year" => (Part::Year, "year"),
        "month" => (Part::Month, "month"),
        "day" => (Part::Day, "day"),
        _ => return Err(bad()),
    };
    let column = match name {
        Some(n) => column_name(n).ok_or_else(bad)?,
        None => format!("{source}_{suffix}"),
    };
    Ok(Some(Generated { column, expr: Expr { part, source } }))
}

impl Generated {
    /// The schema field of the column.
    pub(crate) fn field(&self) -> StructField {
        let mut f = StructField::new(&self.column, self.expr.data_type(), true);
        f.metadata.insert(GENERATION_EXPRESSION.into(), serde_json::Value::String(self.expr.to_sql()));
        f
    }
}

/// The generated columns of a schema (top level).
///
/// # Errors
/// [`Error::Unsupported`] for an expression deltabus cannot compute, or a nested generated
/// column; [`Error::InvalidArgument`] for a source column that is missing or not a timestamp.
pub(crate) fn generated_columns(schema: &StructType) -> Result<Vec<Generated>> {
    let mut out = Vec::new();
    for f in &schema.fields {
        let Some(sql) = f.metadata.get(GENERATION_EXPRESSION) else { continue };
        let sql = sql.as_str().unwrap_or_default();
        let expr = Expr::parse(sql).map_err(|e| Error::unsupported(format!("column {:?}: {e}", f.name)))?;
        let src = schema
            .field(&expr.source)
            .ok_or_else(|| Error::InvalidArgument(format!("column {:?}: `{sql}` names no column", f.name)))?;
        let timeish = [PrimitiveType::Timestamp, PrimitiveType::TimestampNtz, PrimitiveType::Date];
        if !timeish.iter().any(|t| src.data_type == DataType::Primitive(*t)) {
            return Err(Error::InvalidArgument(format!(
                "column {:?}: `{sql}` needs {:?} to be a timestamp or date column",
                f.name, expr.source
            )));
        }
        out.push(Generated { column: f.name.clone(), expr });
    }
    let nested = schema.fields.iter().any(|f| {
        !f.metadata.contains_key(GENERATION_EXPRESSION)
            && serde_json::to_string(&f.data_type).is_ok_and(|s| s.contains(GENERATION_EXPRESSION))
    });
    if nested {
        return Err(Error::unsupported("the table has nested generated columns, which deltabus cannot compute"));
    }
    Ok(out)
}

/// Rows whose given generated values differ from their expressions', with the reason.
///
/// # Errors
/// [`Error::InvalidArgument`] when a source column is not a timestamp or date.
pub(crate) fn disagreeing_rows(batch: &RecordBatch, generated: &[Generated]) -> Result<Vec<(usize, String)>> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let schema = batch.schema();
    for g in generated {
        let (Some(target), Some(source)) = (schema.index_of(&g.column).ok(), schema.index_of(&g.expr.source).ok())
        else {
            continue;
        };
        let given = batch.column(target);
        if given.null_count() == given.len() {
            continue;
        }
        let computed = g.expr.evaluate(batch.column(source).as_ref())?;
        let computed = cast(&computed, schema.field(target).data_type()).map_err(|e| g.expr.bad(e))?;
        let differs = distinct(given, &computed).map_err(|e| g.expr.bad(e))?;
        let show = |a: &ArrayRef, row: usize| {
            if a.is_valid(row) {
                arrow::util::display::array_value_to_string(a, row).unwrap_or_else(|_| "?".into())
            } else {
                "null".into()
            }
        };
        for row in (0..given.len()).filter(|i| given.is_valid(*i) && differs.value(*i)) {
            if !out.iter().any(|(r, _)| *r == row) {
                let why = format!(
                    "column {:?} is {} but {} gives {}",
                    g.column,
                    show(given, row),
                    g.expr.to_sql(),
                    show(&computed, row)
                );
                out.push((row, why));
            }
        }
    }
    out.sort_by_key(|(r, _)| *r);
    Ok(out)
}

/// Fills the generated columns of a logical batch and checks given values.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the column, the row and both values when a given value
/// differs from the expression's.
pub(crate) fn apply(batch: &RecordBatch, generated: &[Generated]) -> Result<RecordBatch> {
    if generated.is_empty() {
        return Ok(batch.clone());
    }
    if let Some((row, why)) = disagreeing_rows(batch, generated)?.into_iter().next() {
        return Err(Error::InvalidArgument(format!("row {row}: {why}")));
    }
    let schema = batch.schema();
    let mut columns = batch.columns().to_vec();
    for g in generated {
        let (Some(target), Some(source)) = (schema.index_of(&g.column).ok(), schema.index_of(&g.expr.source).ok())
        else {
            continue;
        };
        let computed = g.expr.evaluate(batch.column(source).as_ref())?;
        columns[target] = cast(&computed, schema.field(target).data_type()).map_err(|e| g.expr.bad(e))?;
    }
    RecordBatch::try_new(schema, columns).map_err(|e| Error::InvalidArgument(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::TimestampMicrosecondArray;

    #[test]
    fn partition_specs_become_spark_expressions() {
        let g = parse_partition_spec("date(ts)").unwrap().unwrap();
        assert_eq!((g.column.as_str(), g.expr.to_sql().as_str()), ("ts_date", "CAST(ts AS DATE)"));
        let g = parse_partition_spec("hour(`event time`) AS h").unwrap().unwrap();
        assert_eq!((g.column.as_str(), g.expr.to_sql().as_str()), ("h", "date_format(`event time`, 'yyyy-MM-dd-HH')"));
        assert_eq!(parse_partition_spec("country").unwrap(), None);
        assert!(parse_partition_spec("week(ts)").is_err());
        assert!(parse_partition_spec("date(a, b)").is_err());
        for s in ["date(ts)", "hour(ts)", "year(ts)", "month(ts)", "day(ts)"] {
            let g = parse_partition_spec(s).unwrap().unwrap();
            assert_eq!(Expr::parse(&g.expr.to_sql()).unwrap(), g.expr, "{s} round-trips");
        }
        assert_eq!(Expr::parse("cast(`ts` as date)").unwrap().part, Part::Date);
        assert!(Expr::parse("CAST(ts AS STRING)").is_err());
        assert!(Expr::parse("concat(a, b)").is_err());
        assert!(Expr::parse("date_format(ts, 'MM/dd')").is_err());
    }

    #[test]
    fn computes_in_utc_fills_nulls_and_refuses_disagreement() {
        // 2024-02-29T23:30:00Z and a pre-1970 instant.
        let ts =
            TimestampMicrosecondArray::from(vec![Some(1_709_249_400_000_000), None, Some(-1)]).with_timezone("UTC");
        let schema = StructType::new(vec![
            StructField::new("ts", DataType::Primitive(PrimitiveType::Timestamp), true),
            parse_partition_spec("date(ts)").unwrap().unwrap().field(),
            parse_partition_spec("hour(ts)").unwrap().unwrap().field(),
            parse_partition_spec("month(ts)").unwrap().unwrap().field(),
        ]);
        let gens = generated_columns(&schema).unwrap();
        let arrow = Arc::new(crate::delta::arrow_schema::arrow_schema(&schema));
        let nulls = |t: &A| arrow::array::new_null_array(t, 3);
        let batch = RecordBatch::try_new(
            arrow.clone(),
            vec![Arc::new(ts.clone()), nulls(&A::Date32), nulls(&A::Utf8), nulls(&A::Int32)],
        )
        .unwrap();
        let out = apply(&batch, &gens).unwrap();
        let dates = out.column(1).as_primitive::<arrow::datatypes::Date32Type>();
        assert_eq!(dates.value(0), 19_782, "2024-02-29");
        assert!(dates.is_null(1));
        assert_eq!(dates.value(2), -1, "1969-12-31");
        assert_eq!(out.column(2).as_string::<i32>().value(0), "2024-02-29-23");
        assert_eq!(out.column(3).as_primitive::<arrow::datatypes::Int32Type>().value(0), 2);
        // A given value that agrees passes; one that differs is refused with both values.
        let agreeing = apply(&out, &gens).unwrap();
        assert_eq!(agreeing.column(1).as_ref(), out.column(1).as_ref());
        let mut cols = out.columns().to_vec();
        cols[1] = Arc::new(Date32Array::from(vec![Some(19_783), None, Some(-1)]));
        let e = apply(&RecordBatch::try_new(arrow, cols).unwrap(), &gens).unwrap_err().to_string();
        assert!(e.contains("row 0") && e.contains("2024-03-01") && e.contains("2024-02-29"), "{e}");
    }

    #[test]
    fn unsupported_or_misplaced_expressions_are_named() {
        let mut f = StructField::new("g", DataType::Primitive(PrimitiveType::Long), true);
        f.metadata.insert(GENERATION_EXPRESSION.into(), "a + 1".into());
        let a = StructField::new("a", DataType::Primitive(PrimitiveType::Long), true);
        let e = generated_columns(&StructType::new(vec![a.clone(), f])).unwrap_err().to_string();
        assert!(e.contains("`a + 1`"), "{e}");
        let mut f = StructField::new("g", DataType::Primitive(PrimitiveType::Integer), true);
        f.metadata.insert(GENERATION_EXPRESSION.into(), "YEAR(a)".into());
        let e = generated_columns(&StructType::new(vec![a, f])).unwrap_err().to_string();
        assert!(e.contains("timestamp or date"), "{e}");
    }
}
