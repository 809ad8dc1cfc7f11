//! [sync] Reads a Prometheus text exposition (what `/metrics` serves, OpenMetrics text
//! included) back into samples, for `deltabus top`: `name{label="value",...} value
//! [timestamp]` lines; comments and blank lines are skipped, a line that does not parse is
//! left out (a scrape of another exporter's extensions must not stop the view).

/// One sample: a metric name, its labels and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    /// The value of label `key`, if the sample has it.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// Every sample of `text`, in order.
pub fn parse(text: &str) -> Vec<Sample> {
    text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).filter_map(sample).collect()
}

fn sample(line: &str) -> Option<Sample> {
    let name_end = line.find(['{', ' '])?;
    let name = &line[..name_end];
    let (labels, rest) = if line[name_end..].starts_with('{') {
        labels(&line[name_end + 1..])?
    } else {
        (Vec::new(), &line[name_end..])
    };
    let value = number(rest.split_whitespace().next()?)?;
    Some(Sample { name: name.to_string(), labels, value })
}

/// `key="value",...}` and what follows the closing brace.
fn labels(mut text: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut out = Vec::new();
    loop {
        text = text.trim_start_matches([',', ' ']);
        if let Some(rest) = text.strip_prefix('}') {
            return Some((out, rest));
        }
        let (key, rest) = text.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next()? {
                (i, '"') => break i,
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                (_, c) => value.push(c),
            }
        };
        out.push((key.trim().to_string(), value));
        text = &rest[end + 1..];
    }
}

fn number(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => text.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_with_labels_escapes_and_infinities() {
        let text = "# HELP x y\n# TYPE x counter\nx_total{pipeline=\"orders\",partition=\"0\"} 7\n\
                    h_bucket{le=\"+Inf\",pipeline=\"a \\\"q\\\" \\\\ ü\"} 3 1700000000\nplain 2.5e3\nbroken{a=\"\n\n";
        let got = parse(text);
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0].name, "x_total");
        assert_eq!(got[0].label("partition"), Some("0"));
        assert_eq!(got[0].value, 7.0);
        assert_eq!(got[1].label("pipeline"), Some("a \"q\" \\ ü"));
        assert_eq!(got[1].label("le"), Some("+Inf"));
        assert_eq!(got[2], Sample { name: "plain".into(), labels: vec![], value: 2500.0 });
    }
}
