//! `--where` literals checked against the columns they compare with: a string column takes
//! 'quoted' strings, a numeric column numbers, a boolean column `true`/`false`, a date or
//! timestamp column a 'quoted' time; anything else is refused before any file is read, so
//! that `name = 5` or `flag = 1` never compares by a guessed conversion.

use super::predicate::{Expr, Lit};
use super::schema::StructType;

/// What kind of literal a column compares with, or why none.
fn literal_kind(t: &super::schema::DataType) -> Result<&'static str, &'static str> {
    use super::schema::{DataType as D, PrimitiveType as P};
    match t {
        D::Primitive(P::String | P::Binary) => Ok("string"),
        D::Primitive(P::Long | P::Integer | P::Short | P::Byte | P::Float | P::Double | P::Decimal { .. }) => {
            Ok("number")
        }
        D::Primitive(P::Boolean) => Ok("boolean"),
        D::Primitive(P::Date | P::Timestamp | P::TimestampNtz) => Ok("time"),
        D::Primitive(P::Void) => Ok("null"),
        D::Variant => Err("a variant column compares by a path inside it (column.key, column.list.0)"),
        _ => Err("a nested column (struct, array or map) cannot be compared"),
    }
}

fn check_literal(column: &[String], kind: &str, value: &Lit) -> Result<(), String> {
    let name = column.join(".");
    let fits = matches!(
        (kind, value),
        (_, Lit::Null)
            | ("string" | "time", Lit::Str(_))
            | ("number", Lit::Int(_) | Lit::Float(_))
            | ("boolean", Lit::Bool(_))
    );
    if fits {
        return Ok(());
    }
    let given = match value {
        Lit::Int(_) | Lit::Float(_) => "a number",
        Lit::Str(_) => "a string",
        Lit::Bool(_) => "a boolean",
        Lit::Null => "null",
    };
    let want = match kind {
        "string" => "a string column: compare it with a 'quoted' string",
        "number" => "a numeric column: compare it with an unquoted number",
        "boolean" => "a boolean column: compare it with true or false",
        "time" => "a date or timestamp column: compare it with a 'quoted' date or timestamp",
        _ => "a column of no comparable type",
    };
    Err(format!("column {name} is {want}, not {given}"))
}

impl Expr {
    /// Checks every literal against its column's type in `schema` (names match regardless of
    /// case): a literal of another kind is refused rather than converted, so `name = 5` or
    /// `flag = 1` never compares by a guessed conversion.
    ///
    /// # Errors
    /// A message naming the column, its kind and the literal.
    pub fn check_types(&self, schema: &StructType) -> Result<(), String> {
        // A path inside a variant column takes a literal of any kind (`None`).
        let column_type = |path: &[String]| -> Result<Option<&super::schema::DataType>, String> {
            let mut fields = &schema.fields;
            let mut found = None;
            for (i, part) in path.iter().enumerate() {
                if found == Some(&super::schema::DataType::Variant) {
                    return Ok(None);
                }
                let f = fields
                    .iter()
                    .find(|f| f.name.eq_ignore_ascii_case(part))
                    .ok_or_else(|| format!("column {} is not in the table schema", path[..=i].join(".")))?;
                found = Some(&f.data_type);
                if let super::schema::DataType::Struct(s) = &f.data_type {
                    fields = &s.fields;
                }
            }
            found.map(Some).ok_or_else(|| "empty column name".to_string())
        };
        let kind = |column: &[String]| -> Result<Option<&'static str>, String> {
            let Some(t) = column_type(column)? else { return Ok(None) };
            literal_kind(t).map(Some).map_err(|why| format!("column {}: {why}", column.join(".")))
        };
        match self {
            Expr::Cmp { column, value, .. } => match kind(column)? {
                Some(kind) => check_literal(column, kind, value),
                None => Ok(()),
            },
            Expr::In { column, values, .. } => match kind(column)? {
                Some(kind) => values.iter().try_for_each(|v| check_literal(column, kind, v)),
                None => Ok(()),
            },
            Expr::IsNull { column, .. } => column_type(column).map(|_| ()),
            Expr::And(a, b) | Expr::Or(a, b) => a.check_types(schema).and_then(|()| b.check_types(schema)),
            Expr::Not(a) => a.check_types(schema),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::predicate::parse;

    #[test]
    fn literals_of_another_kind_are_refused() {
        let schema = super::StructType::parse(
            r#"{"type":"struct","fields":[{"name":"name","type":"string","nullable":true,"metadata":{}},{"name":"flag","type":"boolean","nullable":true,"metadata":{}},{"name":"n","type":"long","nullable":true,"metadata":{}},{"name":"day","type":"date","nullable":true,"metadata":{}}]}"#,
        )
        .unwrap();
        for bad in ["name = 5", "flag = 1", "name > 4", "n = '5'", "n IN (1, 'x')", "day = 3", "missing = 1"] {
            let e = parse(bad).unwrap().check_types(&schema).unwrap_err();
            assert!(e.contains("column"), "{bad}: {e}");
        }
        for good in
            ["name = '5'", "flag = true", "n > 4.5", "day = '2024-01-01'", "name IS NULL", "NAME = 'x' AND n IN (1, 2)"]
        {
            parse(good).unwrap().check_types(&schema).unwrap_or_else(|e| panic!("{good}: {e}"));
        }
    }
}
