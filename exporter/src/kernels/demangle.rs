//! Kernel names a person can read in Grafana.
//!
//! CUPTI reports mangled names such as
//! `_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEE…`. We
//! demangle them (C++ with `cpp_demangle`, Rust with `rustc-demangle`), drop the
//! return type, parameters and template arguments, keep the last
//! [`KEEP_SCOPES`] scopes (`native::vectorized_elementwise_kernel`), and cut to a
//! maximum length. Wrappers whose name says nothing (`cutlass::Kernel2<…>`,
//! `device_kernel<…>`) keep their first template argument, where the real name is.
//!
//! Names come from other processes, so the work is bounded: demangled output is cut
//! off at [`MAX_DEMANGLED_BYTES`] (a hostile name cannot expand without limit), and a
//! name that does not demangle falls back to the scopes readable in its mangled
//! prefix, or to the raw text.

use std::fmt;

/// Scopes kept, counting the function name itself.
pub const KEEP_SCOPES: usize = 2;
/// Demangled output beyond this many bytes aborts demangling.
pub const MAX_DEMANGLED_BYTES: usize = 8192;
/// Label value used for kernels folded together.
pub const OTHER: &str = "other";

/// Function names that only wrap the real kernel, named by their template argument.
const WRAPPERS: [&str; 6] = [
    "Kernel",
    "Kernel2",
    "kernel",
    "device_kernel",
    "generic_kernel",
    "launch_kernel",
];

/// The short, readable form of a kernel name, at most `max_len` bytes.
pub fn short_name(raw: &str, max_len: usize) -> String {
    let readable = demangle(raw).unwrap_or_else(|| mangled_scopes(raw).unwrap_or(raw.to_string()));
    let short = shorten(&readable);
    let short = sanitize(&short);
    let short = cut(&short, max_len.max(8));
    match short.as_str() {
        "" => "unknown".to_string(),
        // Keep the label value "other" for folded kernels only.
        OTHER => "other_".to_string(),
        _ => short,
    }
}

/// Demangles C++ (`_Z…`) and Rust (`_R…`, legacy `_ZN…17h<hash>E`) names.
fn demangle(raw: &str) -> Option<String> {
    if let Ok(rust) = rustc_demangle::try_demangle(raw) {
        let text = format!("{rust:#}");
        if text.len() <= MAX_DEMANGLED_BYTES {
            return Some(text);
        }
    }
    if !raw.starts_with("_Z") {
        return None;
    }
    let symbol = cpp_demangle::Symbol::new(raw.as_bytes()).ok()?;
    let options = cpp_demangle::DemangleOptions::new()
        .no_params()
        .no_return_type()
        .hide_expression_literal_types();
    let mut out = Bounded(String::new());
    symbol.structured_demangle(&mut out, &options).ok()?;
    Some(out.0)
}

/// A `fmt::Write` that fails once it holds more than [`MAX_DEMANGLED_BYTES`].
struct Bounded(String);

impl fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.0.len() + s.len() > MAX_DEMANGLED_BYTES {
            return Err(fmt::Error);
        }
        self.0.push_str(s);
        Ok(())
    }
}

/// The scopes spelled out at the start of an Itanium-mangled name
/// (`_ZN2at6native4gemmI…` → `at::native::gemm`), for names cut short or too odd
/// for the demangler.
fn mangled_scopes(raw: &str) -> Option<String> {
    let rest = raw.strip_prefix("_Z")?;
    let mut rest = rest.strip_prefix('N').unwrap_or(rest);
    let mut scopes: Vec<&str> = Vec::new();
    loop {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 4 {
            break;
        }
        let len: usize = rest[..digits].parse().ok()?;
        let name = rest.get(digits..digits + len)?;
        scopes.push(name);
        rest = &rest[digits + len..];
    }
    (!scopes.is_empty()).then(|| scopes.join("::"))
}

/// Drops return type, parameters and template arguments; keeps the last scopes.
fn shorten(name: &str) -> String {
    let name = name.trim();
    let name = strip_return_type(name);
    let name = strip_trailing_params(name);
    let (base, first_arg) = strip_templates(name);
    let scopes: Vec<&str> = split_scopes(&base)
        .into_iter()
        .filter(|s| !s.is_empty() && *s != "(anonymous namespace)")
        .collect();
    let keep = &scopes[scopes.len().saturating_sub(KEEP_SCOPES)..];
    let last = keep.last().copied().unwrap_or("");
    let mut short = keep.join("::");
    if WRAPPERS.contains(&last) {
        if let Some(arg) = first_arg {
            let inner = shorten(&arg);
            if !inner.is_empty() {
                short = format!("{short}<{inner}>");
            }
        }
    }
    short
}

/// `void foo<…>(…)` → `foo<…>(…)`: a leading word followed by a space, outside any
/// brackets, is a return type.
fn strip_return_type(name: &str) -> &str {
    let mut depth = 0i32;
    for (i, c) in name.char_indices() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ' ' if depth == 0 => {
                let head = &name[..i];
                if !head.ends_with("operator") {
                    return name[i + 1..].trim_start();
                }
            }
            _ => {}
        }
    }
    name
}

/// Removes a parameter list `(…)` at the end, if balanced.
fn strip_trailing_params(name: &str) -> &str {
    if !name.ends_with(')') {
        return name;
    }
    let mut depth = 0i32;
    for (i, c) in name.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    let head = name[..i].trim_end();
                    return if head.is_empty() || head.ends_with("(anonymous namespace)") {
                        name
                    } else {
                        head
                    };
                }
            }
            _ => {}
        }
    }
    name
}

/// Removes every `<…>` group; returns the text left and the first template argument
/// of the outermost group that closes last (the function's own arguments).
fn strip_templates(name: &str) -> (String, Option<String>) {
    let mut out = String::with_capacity(name.len());
    let mut depth = 0usize;
    let mut arg = String::new();
    let mut first_arg: Option<String> = None;
    let mut in_first = false;
    for c in name.chars() {
        match c {
            '<' => {
                depth += 1;
                if depth == 1 {
                    arg.clear();
                    in_first = true;
                } else if in_first {
                    arg.push(c);
                }
            }
            '>' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    if in_first {
                        first_arg = Some(arg.trim().to_string());
                    }
                    in_first = false;
                } else if in_first {
                    arg.push(c);
                }
            }
            ',' if depth == 1 && in_first => {
                first_arg = Some(arg.trim().to_string());
                in_first = false;
            }
            _ if depth == 0 => out.push(c),
            _ if in_first => arg.push(c),
            _ => {}
        }
    }
    (out, first_arg.filter(|a| !a.is_empty()))
}

/// Splits on `::` outside parentheses (`(anonymous namespace)` stays whole).
fn split_scopes(name: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let bytes = name.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => {
                parts.push(name[start..i].trim());
                i += 2;
                start = i;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(name[start..].trim());
    parts
}

/// Printable text only, whitespace collapsed.
fn sanitize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut space = false;
    for c in name.chars() {
        if c.is_whitespace() || c.is_control() {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    out
}

/// At most `max` bytes, ending in `...` when cut.
fn cut(name: &str, max: usize) -> String {
    if name.len() <= max {
        return name.to_string();
    }
    let mut end = max - 3;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &name[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytorch_elementwise_kernel() {
        let raw = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_";
        assert_eq!(short_name(raw, 80), "native::vectorized_elementwise_kernel");
    }

    #[test]
    fn plain_c_names_stay() {
        assert_eq!(
            short_name("ampere_sgemm_128x64_nn", 80),
            "ampere_sgemm_128x64_nn"
        );
        assert_eq!(
            short_name(
                "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
                80
            ),
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"
        );
    }

    #[test]
    fn simple_cpp_function_with_params() {
        // void add_one(float*, int)
        assert_eq!(short_name("_Z7add_onePfi", 80), "add_one");
    }

    #[test]
    fn wrappers_keep_their_first_template_argument() {
        // void cutlass::Kernel2<cutlass_80_tensorop_bf16_gemm_64x64_tn>(Params)
        let raw = "_ZN7cutlass7Kernel2I38cutlass_80_tensorop_bf16_gemm_64x64_tnEEvNT_6ParamsE";
        assert_eq!(
            short_name(raw, 80),
            "cutlass::Kernel2<cutlass_80_tensorop_bf16_gemm_64x64_tn>"
        );
    }

    #[test]
    fn anonymous_namespaces_are_dropped() {
        // void at::native::(anonymous namespace)::softmax_warp_forward<float>(float*)
        let raw = "_ZN2at6native12_GLOBAL__N_120softmax_warp_forwardIfEEvPT_";
        assert_eq!(short_name(raw, 80), "native::softmax_warp_forward");
    }

    #[test]
    fn truncated_mangled_names_fall_back_to_their_scopes() {
        let raw = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunc";
        assert_eq!(short_name(raw, 80), "native::vectorized_elementwise_kernel");
    }

    #[test]
    fn rust_names_lose_their_hash() {
        assert_eq!(
            short_name("_ZN4core3ptr13drop_in_place17h0123456789abcdefE", 80),
            "ptr::drop_in_place"
        );
    }

    #[test]
    fn long_names_are_cut_with_an_ellipsis() {
        let raw = "k".repeat(300);
        let short = short_name(&raw, 80);
        assert_eq!(short.len(), 80);
        assert!(short.ends_with("..."));
    }

    #[test]
    fn control_characters_and_reserved_names_are_cleaned() {
        assert_eq!(short_name("bad\nname\t\x07x", 80), "bad name x");
        assert_eq!(short_name("other", 80), "other_");
        assert_eq!(short_name("", 80), "unknown");
        assert_eq!(short_name("   ", 80), "unknown");
    }

    #[test]
    fn hostile_names_stay_bounded_and_never_panic() {
        // Substitutions that would double at every level if fully expanded.
        let mut raw = String::from("_Z1fI");
        for _ in 0..200 {
            raw.push_str("S_S_");
        }
        raw.push_str("Ev");
        let short = short_name(&raw, 80);
        assert!(short.len() <= 80);
        for junk in [
            "_Z",
            "_ZN",
            "_ZN999999x",
            "_ZN3ab",
            "<<<>>>",
            ">>>",
            "((((",
            "::::",
            "_R",
        ] {
            let s = short_name(junk, 80);
            assert!(!s.is_empty() && s.len() <= 80, "{junk:?} -> {s:?}");
        }
    }
}
