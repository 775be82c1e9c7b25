//! Locating the workspace's built binaries.

use std::path::PathBuf;

/// Overrides where binaries are looked up (a directory holding them).
pub const BIN_DIR_ENV: &str = "POOLPROF_BIN_DIR";

/// The directory cargo puts binaries in for this build: the test executable runs from
/// `<target>/<profile>/deps/`, binaries live in `<target>/<profile>/`.
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(BIN_DIR_ENV) {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("the test executable has a path");
    let deps = exe.parent().expect("the test executable is in a directory");
    let profile = if deps.ends_with("deps") {
        deps.parent().expect("deps/ has a parent")
    } else {
        deps
    };
    profile.to_path_buf()
}

/// Path of workspace binary `name` (e.g. `poolprof-exporter`).
///
/// Panics, saying how to build it, when it does not exist: cargo does not build other
/// crates' binaries for `cargo test -p poolprof-e2e`.
pub fn workspace_bin(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.is_file(),
        "{name} not found at {}: run `cargo build --workspace --bins` first \
         (or set {BIN_DIR_ENV} to the directory holding it)",
        path.display()
    );
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "cargo build --workspace --bins")]
    fn a_missing_binary_says_how_to_build_it() {
        workspace_bin("poolprof-no-such-binary");
    }

    #[test]
    fn bin_dir_is_the_profile_dir() {
        let dir = bin_dir();
        assert!(dir.join("deps").is_dir() || std::env::var_os(BIN_DIR_ENV).is_some());
    }
}
