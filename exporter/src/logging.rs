//! Log setup: tracing to standard error as logfmt (`ts=… level=… msg=… key=value`,
//! the format Prometheus components use) or JSON, at `--log.level`.

use crate::cli::{LogFormat, LogLevel};
use std::fmt::{self, Write as _};
use std::time::SystemTime;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

impl LogLevel {
    fn as_level(self) -> Level {
        match self {
            LogLevel::Error => Level::ERROR,
            LogLevel::Warn => Level::WARN,
            LogLevel::Info => Level::INFO,
            LogLevel::Debug => Level::DEBUG,
            LogLevel::Trace => Level::TRACE,
        }
    }
}

/// Which events pass: ours at `level`, other crates' (hyper, rustls) at most at
/// info, so `--log.level=debug` shows poolprof's detail rather than protocol noise.
pub fn filter(level: LogLevel) -> EnvFilter {
    let ours = level.as_level();
    let others = level.min(LogLevel::Info).as_level();
    EnvFilter::new(format!(
        "{others},poolprof_exporter={ours},poolprof_inject={ours}"
    ))
}

/// Installs the global subscriber; a second call (tests) leaves the first in place.
pub fn init(level: LogLevel, format: LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter(level))
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
        LogFormat::Logfmt => builder.event_format(Logfmt).try_init(),
    };
}

/// One event per line as logfmt: `ts`, `level`, `target`, `msg`, then the fields.
#[derive(Debug, Clone, Copy, Default)]
pub struct Logfmt;

impl<S, N> FormatEvent<S, N> for Logfmt
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let level = meta.level().as_str().to_ascii_lowercase();
        write!(
            writer,
            "ts={} level={level} target={}",
            humantime::format_rfc3339_millis(SystemTime::now()),
            meta.target()
        )?;
        let mut fields = Fields::default();
        event.record(&mut fields);
        writer.write_str(&fields.line)?;
        writeln!(writer)
    }
}

/// Collects an event's fields as ` key=value` pairs, the message first as `msg`.
#[derive(Default)]
struct Fields {
    message: Option<String>,
    rest: String,
    line: String,
}

impl Fields {
    fn push(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = Some(value.to_string());
        } else {
            let _ = write!(self.rest, " {}=", field.name());
            quote_into(&mut self.rest, value);
        }
        self.line.clear();
        if let Some(message) = &self.message {
            self.line.push_str(" msg=");
            quote_into(&mut self.line, message);
        }
        self.line.push_str(&self.rest);
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.push(field, value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.push(field, &format!("{value:?}"));
    }
}

/// Writes `value` bare when it is a plain token, else double-quoted with escapes.
fn quote_into(out: &mut String, value: &str) {
    let plain = !value.is_empty()
        && !value
            .chars()
            .any(|c| c.is_whitespace() || c == '=' || c == '"' || c.is_control());
    if plain {
        out.push_str(value);
        return;
    }
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn capture(format: LogFormat, emit: impl FnOnce()) -> String {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter(LogLevel::Info))
            .with_writer(move || writer.clone());
        match format {
            LogFormat::Logfmt => {
                tracing::subscriber::with_default(builder.event_format(Logfmt).finish(), emit)
            }
            LogFormat::Json => {
                tracing::subscriber::with_default(builder.json().flatten_event(true).finish(), emit)
            }
        }
        let bytes = buffer.0.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn logfmt_line_has_level_message_and_quoted_fields() {
        let out = capture(LogFormat::Logfmt, || {
            tracing::warn!(
                address = "0.0.0.0:9090",
                reason = "in use",
                count = 3,
                "cannot listen"
            );
        });
        assert_eq!(out.lines().count(), 1, "{out}");
        assert!(out.starts_with("ts="), "{out}");
        assert!(out.contains(" level=warn "), "{out}");
        assert!(out.contains(" msg=\"cannot listen\""), "{out}");
        assert!(out.contains(" address=0.0.0.0:9090"), "{out}");
        assert!(out.contains(" reason=\"in use\""), "{out}");
        assert!(out.contains(" count=3"), "{out}");
    }

    #[test]
    fn logfmt_escapes_quotes_and_newlines() {
        let out = capture(LogFormat::Logfmt, || {
            tracing::info!(detail = "a \"b\"\nc", "x");
        });
        assert!(out.contains(r#"detail="a \"b\"\nc""#), "{out}");
        assert_eq!(out.lines().count(), 1);
    }

    #[test]
    fn json_lines_parse_with_fields_at_top_level() {
        let out = capture(LogFormat::Json, || {
            tracing::info!(gpus = 4, "started");
        });
        let value: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(value["level"], "INFO");
        assert_eq!(value["message"], "started");
        assert_eq!(value["gpus"], 4);
    }

    #[test]
    fn level_filter_drops_less_severe_events() {
        let out = capture(LogFormat::Logfmt, || {
            tracing::debug!("hidden");
            tracing::info!("shown");
        });
        assert!(!out.contains("hidden"));
        assert!(out.contains("shown"));
    }
}
