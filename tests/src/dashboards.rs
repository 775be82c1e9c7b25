//! The Grafana dashboards of `dashboards/` as the tests read them: their template
//! variables and every panel's queries, and Grafana's substitution of variables into a
//! query.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Grafana's built-in variables and the values the tests give them (a 1 h time range).
pub const BUILTINS: [(&str, &str); 5] = [
    ("__rate_interval", "1m"),
    ("__interval", "15s"),
    ("__range", "1h"),
    ("__range_s", "3600"),
    ("__range_ms", "3600000"),
];

/// One dashboard file, parsed.
#[derive(Debug, Clone)]
pub struct Dashboard {
    /// The file's name, e.g. `poolprof-fleet.json`, for messages.
    pub file: String,
    /// The whole JSON model.
    pub json: Value,
}

/// A template variable, as far as the tests use it.
#[derive(Debug, Clone, PartialEq)]
pub struct Variable {
    /// `name`, used as `$name` in queries.
    pub name: String,
    /// `datasource`, `query`, `custom`, ...
    pub kind: String,
    /// The query of a `query` variable (`label_values(SELECTOR, LABEL)`), or the
    /// comma-separated values of a `custom` one.
    pub query: String,
    /// The value Grafana substitutes for "All", when the variable offers it.
    pub all_value: Option<String>,
}

/// One query of one panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The panel's title.
    pub panel: String,
    /// The panel's type (`timeseries`, `stat`, `table`, ...).
    pub panel_type: String,
    /// The target's `refId`.
    pub ref_id: String,
    /// The PromQL, variables unsubstituted.
    pub expr: String,
    /// Whether Grafana runs it as an instant query (else a range query).
    pub instant: bool,
}

/// The repository's `dashboards/` directory.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../dashboards")
}

/// Every `dashboards/*.json`, sorted by name; panics naming a file that is not JSON.
pub fn load_all() -> Vec<Dashboard> {
    let dir = dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no dashboards in {}", dir.display());
    files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let json = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
            Dashboard {
                file: path.file_name().unwrap().to_string_lossy().into_owned(),
                json,
            }
        })
        .collect()
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

impl Dashboard {
    /// The template variables, in order (later ones may use earlier ones).
    pub fn variables(&self) -> Vec<Variable> {
        let list = self.json["templating"]["list"].as_array();
        list.into_iter()
            .flatten()
            .map(|v| {
                let query = match &v["query"] {
                    Value::Object(q) => text(&q["query"]),
                    other => text(other),
                };
                Variable {
                    name: text(&v["name"]),
                    kind: text(&v["type"]),
                    query,
                    all_value: (v["includeAll"] == true)
                        .then(|| v["allValue"].as_str().unwrap_or(".*").to_string()),
                }
            })
            .collect()
    }

    /// Every panel, rows' nested panels included, in file order.
    pub fn panels(&self) -> Vec<&Value> {
        let mut out = Vec::new();
        for panel in self.json["panels"].as_array().into_iter().flatten() {
            out.push(panel);
            out.extend(panel["panels"].as_array().into_iter().flatten());
        }
        out
    }

    /// Every query of every panel.
    pub fn targets(&self) -> Vec<Target> {
        let mut out = Vec::new();
        for panel in self.panels() {
            for target in panel["targets"].as_array().into_iter().flatten() {
                out.push(Target {
                    panel: text(&panel["title"]),
                    panel_type: text(&panel["type"]),
                    ref_id: text(&target["refId"]),
                    expr: text(&target["expr"]),
                    instant: target["instant"] == true,
                });
            }
        }
        out
    }
}

/// Every PromQL text the dashboards hold (panel queries and `label_values` selectors of
/// variables), each with where it is, for name checks.
pub fn all_promql() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for dashboard in load_all() {
        for target in dashboard.targets() {
            out.push((
                format!(
                    "{}: panel {:?} {}",
                    dashboard.file, target.panel, target.ref_id
                ),
                target.expr,
            ));
        }
        for var in dashboard.variables() {
            if let Some((selector, _)) = parse_label_values(&var.query) {
                out.push((
                    format!("{}: variable {}", dashboard.file, var.name),
                    selector,
                ));
            }
        }
    }
    out
}

/// `label_values(SELECTOR, LABEL)` → `(SELECTOR, LABEL)`; `None` for other queries.
pub fn parse_label_values(query: &str) -> Option<(String, String)> {
    let inner = query
        .trim()
        .strip_prefix("label_values(")?
        .strip_suffix(')')?;
    let (selector, label) = inner.rsplit_once(',')?;
    Some((selector.trim().to_string(), label.trim().to_string()))
}

/// The variable names `text` uses (`$name`, `${name}`, `${name:format}`).
pub fn used_variables(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    substitute_with(text, |name| {
        names.push(name.to_string());
        None
    });
    names
}

/// `text` with each variable of `values` (and [`BUILTINS`]) replaced by its value;
/// unknown variables are left as they are, so that a query using one fails to parse.
pub fn substitute(text: &str, values: &BTreeMap<String, String>) -> String {
    substitute_with(text, |name| {
        values.get(name).cloned().or_else(|| {
            BUILTINS
                .iter()
                .find(|(b, _)| *b == name)
                .map(|(_, v)| v.to_string())
        })
    })
}

fn substitute_with(text: &str, mut value: impl FnMut(&str) -> Option<String>) -> String {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, len) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => {
                    let inner = &braced[..end];
                    (inner.split(':').next().unwrap_or("").to_string(), end + 2)
                }
                None => (String::new(), 0),
            }
        } else {
            let name: String = after.chars().take_while(|c| is_name(*c)).collect();
            let len = name.len();
            (name, len)
        };
        match (!name.is_empty()).then(|| value(&name)).flatten() {
            Some(v) => out.push_str(&v),
            None => out.push_str(&rest[at..at + 1 + len]),
        }
        rest = &rest[at + 1 + len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_longest_names_braces_and_builtins() {
        let values: BTreeMap<String, String> = [("workload", "w"), ("workload_a", "a")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(
            substitute(
                r#"x{a="$workload_a",b="${workload}",c="${workload:raw}"}[$__rate_interval] $nope $"#,
                &values
            ),
            r#"x{a="a",b="w",c="w"}[1m] $nope $"#
        );
        assert_eq!(
            used_variables("$a and ${b} and ${c:csv} and $__range"),
            ["a", "b", "c", "__range"]
        );
        assert_eq!(
            parse_label_values(r#"label_values(m{a="x,y"}, uuid)"#),
            Some((r#"m{a="x,y"}"#.to_string(), "uuid".to_string()))
        );
        assert_eq!(parse_label_values("query_result(up)"), None);
    }
}
