//! Content negotiation for `/metrics`: exposition format from `Accept`, gzip from
//! `Accept-Encoding`, both honouring q-values.

/// The exposition formats `/metrics` can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text format 0.0.4 (the default).
    Text,
    /// OpenMetrics 1.0.0 text.
    OpenMetrics,
}

impl Format {
    /// The `Content-Type` header value for this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// How closely a media range matched a format; a more specific range wins over a
/// wildcard (RFC 9110 §12.5.1), whatever the order in the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Specificity {
    AnyType,
    AnySubtype,
    Exact,
    ExactWithVersion,
}

/// One parsed element of an `Accept` or `Accept-Encoding` list.
struct Element<'a> {
    value: &'a str,
    params: Vec<(&'a str, &'a str)>,
    q: f32,
}

fn parse_list(header: &str) -> impl Iterator<Item = Element<'_>> {
    header.split(',').filter_map(|item| {
        let mut parts = item.split(';').map(str::trim);
        let value = parts.next().filter(|v| !v.is_empty())?;
        let mut q = 1.0;
        let mut params = Vec::new();
        for param in parts {
            let (name, val) = param.split_once('=').unwrap_or((param, ""));
            let (name, val) = (name.trim(), val.trim().trim_matches('"'));
            if name.eq_ignore_ascii_case("q") {
                // An unparseable q-value makes the element unacceptable rather than preferred.
                q = val
                    .parse::<f32>()
                    .ok()
                    .filter(|q| (0.0..=1.0).contains(q))?;
            } else {
                params.push((name, val));
            }
        }
        Some(Element { value, params, q })
    })
}

/// The q-value the `Accept` header gives `format`, with how specific the deciding
/// range was; `None` when no range matches it.
fn quality(accept: &str, format: Format) -> Option<(Specificity, f32)> {
    let (ty, subtype, version) = match format {
        Format::Text => ("text", "plain", "0.0.4"),
        Format::OpenMetrics => ("application", "openmetrics-text", "1.0.0"),
    };
    parse_list(accept)
        .filter_map(|element| {
            let (t, s) = element.value.split_once('/')?;
            let wanted_version = element
                .params
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case("version"))
                .map(|(_, v)| *v);
            let specificity = match (t.trim(), s.trim()) {
                ("*", "*") => Specificity::AnyType,
                (t, "*") if t.eq_ignore_ascii_case(ty) => Specificity::AnySubtype,
                (t, s) if t.eq_ignore_ascii_case(ty) && s.eq_ignore_ascii_case(subtype) => {
                    match wanted_version {
                        None => Specificity::Exact,
                        Some(v) if v == version => Specificity::ExactWithVersion,
                        Some(_) => return None,
                    }
                }
                _ => return None,
            };
            Some((specificity, element.q))
        })
        .max_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)))
}

/// The format to serve for this `Accept` header: OpenMetrics only when the client
/// prefers it (by q-value, ties broken towards the more specific range), otherwise
/// text, which is also the answer to a missing or unsatisfiable header.
pub fn choose_format(accept: Option<&str>) -> Format {
    let Some(accept) = accept else {
        return Format::Text;
    };
    match (
        quality(accept, Format::OpenMetrics),
        quality(accept, Format::Text),
    ) {
        (Some((_, om)), _) if om <= 0.0 => Format::Text,
        (Some(_), None) => Format::OpenMetrics,
        (Some((om_spec, om)), Some((text_spec, text))) => {
            if om > text || (om == text && om_spec > text_spec) {
                Format::OpenMetrics
            } else {
                Format::Text
            }
        }
        (None, _) => Format::Text,
    }
}

/// True when `Accept-Encoding` allows gzip: `gzip` (or `x-gzip`) with q > 0, or `*`
/// with q > 0 when gzip is not named.
pub fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    let Some(header) = accept_encoding else {
        return false;
    };
    let mut named = None;
    let mut wildcard = None;
    for element in parse_list(header) {
        let coding = element.value;
        if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            named = Some(named.map_or(element.q, |q: f32| q.max(element.q)));
        } else if coding == "*" {
            wildcard = Some(element.q);
        }
    }
    named.or(wildcard).is_some_and(|q| q > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_accept_header_is_text() {
        assert_eq!(choose_format(None), Format::Text);
        assert_eq!(choose_format(Some("")), Format::Text);
    }

    #[test]
    fn prometheus_scrape_header_prefers_openmetrics() {
        let prometheus = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,\
                          application/openmetrics-text;version=0.0.1;q=0.5,\
                          text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,\
                          text/plain;version=0.0.4;q=0.3,*/*;q=0.2";
        assert_eq!(choose_format(Some(prometheus)), Format::OpenMetrics);
    }

    #[test]
    fn q_values_decide_between_formats() {
        let text_first = "application/openmetrics-text;version=1.0.0;q=0.2,text/plain;q=0.9";
        assert_eq!(choose_format(Some(text_first)), Format::Text);
        let om_first = "text/plain;q=0.5,application/openmetrics-text;q=0.8";
        assert_eq!(choose_format(Some(om_first)), Format::OpenMetrics);
    }

    #[test]
    fn openmetrics_with_q_zero_is_refused() {
        assert_eq!(
            choose_format(Some("application/openmetrics-text;q=0,*/*")),
            Format::Text
        );
    }

    #[test]
    fn wildcards_and_browsers_get_text() {
        assert_eq!(choose_format(Some("*/*")), Format::Text);
        let firefox = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
        assert_eq!(choose_format(Some(firefox)), Format::Text);
    }

    #[test]
    fn explicit_openmetrics_beats_an_equal_wildcard() {
        assert_eq!(
            choose_format(Some("*/*,application/openmetrics-text")),
            Format::OpenMetrics
        );
    }

    #[test]
    fn unknown_openmetrics_version_is_not_served_as_openmetrics() {
        assert_eq!(
            choose_format(Some("application/openmetrics-text;version=2.0.0")),
            Format::Text
        );
    }

    #[test]
    fn malformed_q_value_does_not_select_openmetrics() {
        assert_eq!(
            choose_format(Some("application/openmetrics-text;q=abc")),
            Format::Text
        );
        assert_eq!(
            choose_format(Some("application/openmetrics-text;q=7")),
            Format::Text
        );
    }

    #[test]
    fn gzip_acceptance_follows_q_values() {
        assert!(accepts_gzip(Some("gzip")));
        assert!(accepts_gzip(Some("deflate, gzip;q=0.5")));
        assert!(accepts_gzip(Some("*")));
        assert!(accepts_gzip(Some("X-GZIP")));
        assert!(!accepts_gzip(None));
        assert!(!accepts_gzip(Some("identity")));
        assert!(!accepts_gzip(Some("gzip;q=0")));
        assert!(!accepts_gzip(Some("gzip;q=0, *")));
        assert!(!accepts_gzip(Some("*;q=0")));
    }
}
