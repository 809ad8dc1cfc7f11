use super::*;

#[test]
fn errors_speak_sql_not_rust() {
    let e = parse("name LIKE 'a%'").unwrap_err();
    assert!(e.contains("`LIKE`, which deltabus does not support"), "{e}");
    assert!(!e.contains("Some(") && !e.contains("Ident("), "{e}");
    let e = parse("id = ").unwrap_err();
    assert!(e.contains("found the end of the predicate"), "{e}");
    let e = parse("id = 1 2").unwrap_err();
    assert!(e.contains("unexpected the number 2"), "{e}");
}
use arrow::array::Int64Array;

#[test]
fn fractional_literals_compare_numerically_with_integer_columns() {
    let batch =
        RecordBatch::try_from_iter(vec![("id", Arc::new(arrow::array::Int64Array::from(vec![1, 2, 3])) as ArrayRef)])
            .unwrap();
    let got = parse("id > 1.5").unwrap().evaluate(&batch).unwrap();
    assert_eq!(got, BooleanArray::from(vec![false, true, true]));
    let got = parse("id = 2.0").unwrap().evaluate(&batch).unwrap();
    assert_eq!(got, BooleanArray::from(vec![false, true, false]));
}

#[test]
fn hostile_nesting_is_an_error_and_long_chains_are_balanced() {
    let deep = format!("{}id = 1{}", "(".repeat(10_000), ")".repeat(10_000));
    assert!(parse(&deep).unwrap_err().contains("nested more than"));
    assert!(parse(&format!("{}id = 1", "NOT ".repeat(30_000))).unwrap_err().contains("nested more than"));
    let chain = vec!["id = 1"; 12_000].join(" AND ");
    let e = parse(&chain).unwrap();
    fn depth(e: &Expr) -> usize {
        match e {
            Expr::And(a, b) | Expr::Or(a, b) => 1 + depth(a).max(depth(b)),
            Expr::Not(a) => 1 + depth(a),
            _ => 1,
        }
    }
    assert!(depth(&e) <= 15, "balanced: depth {}", depth(&e));
    let ok = format!("{}id = 1{}", "(".repeat(50), ")".repeat(50));
    assert!(parse(&ok).is_ok());
}

#[test]
fn parses_the_grammar() {
    let e = parse("id >= 10 AND (name = 'o''k' OR tag IN (1, 2)) AND NOT x IS NULL").unwrap();
    assert_eq!(e.columns(), vec!["id", "name", "tag", "x"]);
    assert!(parse("id >").is_err());
    assert!(parse("id = 1 garbage").is_err());
    assert!(parse("'unterminated").is_err());
    assert_eq!(
        parse("a.b <> 3").unwrap(),
        Expr::Cmp { column: vec!["a".into(), "b".into()], op: Op::Ne, value: Lit::Int(3) }
    );
}

#[test]
fn prunes_with_stats_and_partitions() {
    let stats: Value = serde_json::from_str(
        r#"{"numRecords":10,"minValues":{"id":10,"s":"b"},"maxValues":{"id":20,"s":"m"},"nullCount":{"id":0,"s":2}}"#,
    )
    .unwrap();
    let none = |_: &str| None;
    let phys = |p: &[String]| p.to_vec();
    let m = |q: &str| parse(q).unwrap().may_match_file(&none, Some(&stats), &phys);
    assert!(m("id = 15") && !m("id = 25") && !m("id < 10") && m("id <= 10") && !m("id > 20"));
    assert!(m("id IN (1, 12)") && !m("id IN (1, 30)"));
    assert!(!m("id IS NULL") && m("s IS NULL") && m("s IS NOT NULL"));
    assert!(!m("s = 'z'") && m("s = 'c'"));
    assert!(m("id = 25 OR s = 'c'") && !m("id = 25 AND s = 'c'"));
    assert!(parse("id = 25").unwrap().may_match_file(&none, None, &phys), "no stats: may match");
    let part = |c: &str| (c == "p").then(|| Some("2024-01-01".to_string()));
    assert!(!parse("p = '2024-01-02'").unwrap().may_match_file(&part, None, &phys));
    assert!(parse("p >= '2024-01-01'").unwrap().may_match_file(&part, None, &phys));
}

#[test]
fn evaluates_rows_three_valued() {
    let batch =
        RecordBatch::try_from_iter(vec![("id", Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])) as ArrayRef)])
            .unwrap();
    let rows = |q: &str| parse(q).unwrap().evaluate(&batch).unwrap().iter().map(|v| v.unwrap()).collect::<Vec<_>>();
    assert_eq!(rows("id > 1"), vec![false, false, true]);
    assert_eq!(rows("NOT id > 1"), vec![true, false, false], "null stays unknown under NOT");
    assert_eq!(rows("id IS NULL OR id = 1"), vec![true, true, false]);
    assert_eq!(rows("id IN (3, 4)"), vec![false, false, true]);
    assert!(parse("id = 'x'").unwrap().evaluate(&batch).is_err());
    assert!(parse("nope = 1").unwrap().evaluate(&batch).is_err());
}
