//! Shared by the ledger's tests: the example's paths, running the command, and a stand-in
//! for the Kubernetes API server.

#![allow(dead_code)]

pub mod mock_api;

use std::path::{Path, PathBuf};

use ledger::cli::{LedgerArgs, run};

/// The repository's `test_data/`.
pub fn test_data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data")
}

pub fn example() -> PathBuf {
    test_data().join("example")
}

pub fn scenario(name: &str) -> PathBuf {
    test_data().join("scenarios").join(name)
}

/// What one run printed, without styles, and its exit code.
pub struct Ran {
    pub code: u8,
    pub out: String,
    pub err: String,
}

/// Runs the ledger in-process, its output stripped of styles as a non-terminal gets it.
pub fn ran(args: &LedgerArgs) -> Ran {
    let mut out = anstream::StripStream::new(Vec::new());
    let mut err = anstream::StripStream::new(Vec::new());
    let code = run(args, &mut out, &mut err);
    Ran {
        code,
        out: String::from_utf8(out.into_inner()).expect("UTF-8 output"),
        err: String::from_utf8(err.into_inner()).expect("UTF-8 output"),
    }
}

/// The flags for a cluster-state file with the example's settings.
pub fn on_state(state: &Path, settings: &Path) -> LedgerArgs {
    LedgerArgs {
        state: Some(state.to_path_buf()),
        settings: Some(settings.to_path_buf()),
        ..LedgerArgs::default()
    }
}

/// Asserts that `args` fail with exit code 2 and an `error: ` line containing `expected`.
pub fn fails_with(args: &LedgerArgs, expected: &str) {
    let ran = ran(args);
    assert_eq!(ran.code, 2, "{expected}: {}", ran.out);
    assert!(ran.err.starts_with("error: "), "{}", ran.err);
    assert!(ran.err.contains(expected), "{expected}: {}", ran.err);
}
