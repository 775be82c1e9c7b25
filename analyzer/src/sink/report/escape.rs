//! Text made safe for HTML and SVG: workload names, kernel classes and reasons come from
//! outside (Prometheus labels), so every one is escaped before it reaches the page.

/// `text` with `&`, `<`, `>`, `"` and `'` as character references, safe in element
/// content and in quoted attributes alike.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn markup_and_quotes_become_references() {
        assert_eq!(
            escape(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
    }

    #[test]
    fn plain_names_stay_as_they_are() {
        assert_eq!(escape("ns/train-a_1 é"), "ns/train-a_1 é");
    }
}
