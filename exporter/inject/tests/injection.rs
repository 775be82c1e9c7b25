//! The built cdylib, loaded the way CUDA loads it (dlopen + InitializeInjection), on a
//! machine without CUDA: it must step aside with one line and never harm the host.

use std::ffi::{c_int, CString};
use std::path::PathBuf;
use std::process::Command;

const CHILD: &str = "POOLPROF_TEST_CHILD";

/// The cdylib cargo built next to this test binary.
fn library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let lib = deps.join("libpoolprof_inject.so");
    assert!(
        lib.exists(),
        "{} missing: build the cdylib first",
        lib.display()
    );
    lib
}

/// In the child: dlopen the library, call InitializeInjection twice, print results.
#[test]
fn child_loads_library() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let path = CString::new(library().to_str().unwrap()).unwrap();
    // SAFETY: loading our own library and calling its exported entry point.
    unsafe {
        let handle = libc::dlopen(path.as_ptr(), libc::RTLD_NOW);
        assert!(!handle.is_null(), "dlopen failed");
        let sym = libc::dlsym(handle, c"InitializeInjection".as_ptr());
        assert!(!sym.is_null(), "InitializeInjection not exported");
        let init: extern "C" fn() -> c_int = std::mem::transmute(sym);
        let sym = libc::dlsym(handle, c"poolprof_inject_tracing".as_ptr());
        assert!(!sym.is_null(), "poolprof_inject_tracing not exported");
        let tracing: extern "C" fn() -> c_int = std::mem::transmute(sym);
        let before = tracing();
        println!("first={} second={}", init(), init());
        println!("tracing before={before} after={}", tracing());
    }
}

fn run_child(env: &[(&str, &str)]) -> (String, String) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "child_loads_library",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, "1")
    .env("LD_LIBRARY_PATH", "")
    .env_remove("POOLPROF_INJECT_DUTY")
    .env_remove("POOLPROF_INJECT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "child failed: {out:?}");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn our_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("poolprof-inject:"))
        .collect()
}

#[test]
fn without_cupti_it_steps_aside_with_one_line_and_returns_success() {
    let (stdout, stderr) = run_child(&[]);
    assert!(stdout.contains("first=1 second=1"), "{stdout}");
    assert!(stdout.contains("tracing before=-1 after=-1"), "{stdout}");
    let lines = our_lines(&stderr);
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("CUPTI"), "{}", lines[0]);
    assert!(lines[0].ends_with(", stepping aside"), "{}", lines[0]);
}

#[test]
fn a_bad_variable_is_named_and_the_library_steps_aside() {
    let (_, stderr) = run_child(&[("POOLPROF_INJECT_DUTY", "often")]);
    let lines = our_lines(&stderr);
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("POOLPROF_INJECT_DUTY=\"often\""),
        "{}",
        lines[0]
    );
}

#[test]
fn off_means_silent() {
    let (stdout, stderr) = run_child(&[("POOLPROF_INJECT", "off")]);
    assert!(stdout.contains("first=1"), "{stdout}");
    assert!(stdout.contains("tracing before=-1 after=-1"), "{stdout}");
    assert!(our_lines(&stderr).is_empty(), "{stderr}");
}

#[test]
fn never_tracing_is_a_valid_setting_that_still_steps_aside_without_cupti() {
    let (stdout, stderr) = run_child(&[("POOLPROF_INJECT_DUTY", "0/1000")]);
    assert!(stdout.contains("tracing before=-1 after=-1"), "{stdout}");
    let lines = our_lines(&stderr);
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("CUPTI"), "{}", lines[0]);
}
