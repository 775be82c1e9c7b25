//! The command line: flags over the config file, secrets from files, usage errors.

use std::io::Write;
use std::time::Duration;

use clap::Parser;
use poolprof_analyzer::cli::{Cli, Command, CommonArgs};
use poolprof_analyzer::error::ExitCode;
use poolprof_analyzer::source::prometheus::Auth;

fn common(args: &[&str]) -> CommonArgs {
    let mut argv = vec!["poolprof-analyzer", "run", "--once"];
    argv.extend_from_slice(args);
    match Cli::try_parse_from(argv).unwrap().command {
        Command::Run(run) => run.common,
        other => panic!("parsed as {other:?}"),
    }
}

fn file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

#[test]
fn flags_override_the_config_file() {
    let cfg = file("[source]\nurl = \"http://from-file:9090\"\nattempts = 7\n[analysis]\nlookback = \"2h\"\nhorizons = [\"30m\"]\n");
    let path = cfg.path().to_str().unwrap();
    let s = common(&[
        "--config",
        path,
        "--lookback",
        "3h",
        "--horizon",
        "15m",
        "--horizon",
        "2h",
        "--shard",
        "1/3",
    ])
    .settings()
    .unwrap();
    assert_eq!(s.client.url.as_str(), "http://from-file:9090/");
    assert_eq!(s.client.retry.attempts, 7);
    assert_eq!(s.config.analysis.lookback, Duration::from_secs(3 * 3600));
    assert_eq!(
        s.config.analysis.horizons,
        vec![Duration::from_secs(900), Duration::from_secs(7200)]
    );
    assert_eq!(s.shard.to_string(), "1/3");
    let s = common(&["--config", path, "--prometheus", "http://flag:9090"])
        .settings()
        .unwrap();
    assert_eq!(s.client.url.as_str(), "http://flag:9090/");
}

#[test]
fn secrets_come_from_files_without_their_newline() {
    let token = file("t0ken\n");
    let s = common(&[
        "--prometheus",
        "http://p:9090",
        "--bearer-token-file",
        token.path().to_str().unwrap(),
    ])
    .settings()
    .unwrap();
    assert!(matches!(s.client.auth, Auth::Bearer(ref t) if t == "t0ken"));
    let password = file("pw\r\n");
    let s = common(&[
        "--prometheus",
        "http://p:9090",
        "--basic-auth-user",
        "ops",
        "--basic-auth-password-file",
        password.path().to_str().unwrap(),
    ])
    .settings()
    .unwrap();
    assert!(
        matches!(s.client.auth, Auth::Basic { ref username, ref password } if username == "ops" && password == "pw")
    );
}

#[test]
fn usage_errors_exit_2_and_say_what_to_do() {
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec![], "--prometheus"),
        (
            vec![
                "--prometheus",
                "http://p",
                "--bearer-token-file",
                "/nonexistent/token",
            ],
            "/nonexistent/token",
        ),
        (
            vec!["--prometheus", "http://p", "--basic-auth-user", "ops"],
            "password_file",
        ),
        (
            vec!["--prometheus", "http://p", "--lookback", "30s"],
            "analysis.lookback",
        ),
        (vec!["--prometheus", "http://p", "--end=-5"], "--end"),
        (
            vec!["--prometheus", "http://p", "--concurrency", "0"],
            "analysis.concurrency",
        ),
    ];
    for (args, needle) in cases {
        let err = common(&args).settings().unwrap_err();
        assert_eq!(err.exit_code(), ExitCode::Usage, "{args:?}");
        assert!(err.to_string().contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn bad_flag_values_are_refused_by_the_parser() {
    for argv in [
        vec!["poolprof-analyzer", "run", "--once", "--shard", "3/3"],
        vec![
            "poolprof-analyzer",
            "run",
            "--once",
            "--prometheus",
            "not a url",
        ],
        vec!["poolprof-analyzer", "serve", "--listen", "nowhere"],
        vec!["poolprof-analyzer", "serve", "--interval", "0s"],
        vec!["poolprof-analyzer", "serve", "--api", "nowhere"],
        vec![
            "poolprof-analyzer",
            "run",
            "--once",
            "--class-thresholds",
            "guess",
        ],
        vec![
            "poolprof-analyzer",
            "run",
            "--once",
            "--max-paired-workloads",
            "1",
        ],
    ] {
        let err = Cli::try_parse_from(&argv).unwrap_err();
        assert_eq!(err.exit_code(), 2, "{argv:?}");
    }
    let ok = Cli::try_parse_from(["poolprof-analyzer", "serve", "--listen", ":9091"]).unwrap();
    match ok.command {
        Command::Serve(s) => assert_eq!(s.listen.to_string(), "0.0.0.0:9091"),
        other => panic!("{other:?}"),
    }
    // By default /metrics stays off the Pushgateway's 9091 and the API is on 7070.
    let defaults = Cli::try_parse_from(["poolprof-analyzer", "serve"]).unwrap();
    match defaults.command {
        Command::Serve(s) => {
            assert_eq!(s.listen.port(), 7071);
            assert_eq!(s.api.port(), 7070);
        }
        other => panic!("{other:?}"),
    }
}
