//! A small parser for the Prometheus text format (and OpenMetrics sample lines), so that
//! tests can assert on a `/metrics` body without a server in between.

use std::collections::BTreeMap;

use crate::api::Labels;

/// One sample line of an exposition.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpositionSample {
    /// Metric name as written (OpenMetrics counters keep their `_total`).
    pub name: String,
    /// Labels of the line.
    pub labels: Labels,
    /// The value (NaN and ±Inf allowed).
    pub value: f64,
    /// The optional timestamp as written (milliseconds in text, seconds in OpenMetrics).
    pub timestamp: Option<f64>,
}

impl ExpositionSample {
    /// The value of label `name`, or "" when absent.
    pub fn label(&self, name: &str) -> &str {
        self.labels.get(name).map(String::as_str).unwrap_or("")
    }
}

/// A line that is not a valid sample.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("exposition line {line}: {why}: {text:?}")]
pub struct ParseError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub why: &'static str,
    /// The offending line.
    pub text: String,
}

/// Parses every sample line of `body`, skipping comments (`# ...`) and blank lines.
pub fn parse(body: &str) -> Result<Vec<ExpositionSample>, ParseError> {
    body.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|(index, line)| {
            parse_line(line).map_err(|why| ParseError {
                line: index + 1,
                why,
                text: line.to_string(),
            })
        })
        .collect()
}

fn parse_line(line: &str) -> Result<ExpositionSample, &'static str> {
    let name_end = line
        .find(['{', ' '])
        .ok_or("no value after the metric name")?;
    let name = &line[..name_end];
    if name.is_empty() {
        return Err("empty metric name");
    }
    let (labels, rest) = if line[name_end..].starts_with('{') {
        parse_labels(&line[name_end + 1..])?
    } else {
        (BTreeMap::new(), &line[name_end..])
    };
    let mut fields = rest.split_whitespace();
    let value = parse_value(fields.next().ok_or("no value")?)?;
    let timestamp = fields
        .next()
        .map(|t| t.parse::<f64>().map_err(|_| "bad timestamp"))
        .transpose()?;
    if fields.next().is_some() {
        return Err("trailing fields after the timestamp");
    }
    Ok(ExpositionSample {
        name: name.to_string(),
        labels,
        value,
        timestamp,
    })
}

/// Parses `a="x",b="y"}` and returns the labels and what follows the `}`.
fn parse_labels(mut rest: &str) -> Result<(Labels, &str), &'static str> {
    let mut labels = Labels::new();
    loop {
        rest = rest.trim_start_matches([' ', ',']);
        if let Some(after) = rest.strip_prefix('}') {
            return Ok((labels, after));
        }
        let eq = rest.find('=').ok_or("label without '='")?;
        let name = rest[..eq].trim().to_string();
        let quoted = rest[eq + 1..]
            .strip_prefix('"')
            .ok_or("label value not quoted")?;
        let (value, after) = unescape_until_quote(quoted)?;
        labels.insert(name, value);
        rest = after;
    }
}

fn unescape_until_quote(text: &str) -> Result<(String, &str), &'static str> {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((value, &text[i + 1..])),
            '\\' => match chars.next().map(|(_, e)| e) {
                Some('n') => value.push('\n'),
                Some(e @ ('\\' | '"')) => value.push(e),
                _ => return Err("bad escape in a label value"),
            },
            c => value.push(c),
        }
    }
    Err("unterminated label value")
}

fn parse_value(text: &str) -> Result<f64, &'static str> {
    match text {
        "+Inf" | "Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => text.parse().map_err(|_| "bad value"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_labels_values_and_timestamps() {
        let body =
            "# HELP x y\n# TYPE a gauge\na 1\nb{gpu=\"0\",uuid=\"GPU-1\"} 2.5 1700000000000\n\n\
                    c{v=\"q\\\"\\\\\\n\"} +Inf\n# EOF\n";
        let samples = parse(body).unwrap();
        assert_eq!(samples.len(), 3);
        assert_eq!((samples[0].name.as_str(), samples[0].value), ("a", 1.0));
        assert_eq!(samples[1].label("uuid"), "GPU-1");
        assert_eq!(samples[1].timestamp, Some(1.7e12));
        assert_eq!(samples[2].label("v"), "q\"\\\n");
        assert_eq!(samples[2].value, f64::INFINITY);
    }

    #[test]
    fn rejects_bad_lines_with_their_number() {
        let err = parse("ok 1\nbad{a=1} 2\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert_eq!(err.why, "label value not quoted");
        assert!(parse("a{b=\"c} 1").is_err());
        assert!(parse("a notanumber").is_err());
        assert!(parse("a").is_err());
    }
}
