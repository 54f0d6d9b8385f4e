//! One case of the catalogue: its input, its command and what it must end
//! with; and the variables the cases that reach a store set.

use std::path::Path;

use blobbench::records::EngineKind;

/// What a case must end with.
#[derive(Clone, Copy)]
pub(super) enum Expect {
    /// Non-zero exit; the one stderr line contains this text.
    Fail(&'static str),
    /// Success; stdout contains this text.
    Works(&'static str),
    /// Success after SQLite recovered a crashed writer's journal or WAL:
    /// the files change, the committed data does not.
    Recovers,
}

/// Builds a case's input in its directory.
pub(super) type Fixture = fn(&Path);

pub(super) struct Case {
    pub(super) name: String,
    pub(super) fixture: Fixture,
    /// "@x" stands for the file or directory x of the case's directory.
    pub(super) args: Vec<String>,
    pub(super) expect: Expect,
    /// RLIMIT_FSIZE for the command: a full disk without mounting one.
    pub(super) fsize: Option<u64>,
    /// Another process holds an exclusive lock on "@db" while the command runs.
    pub(super) locked: bool,
    /// The case's directory is seen through the power-cut layer, with this
    /// fault (name, from which occurrence) injected; "@x" is then on the mount.
    pub(super) fault: Option<(&'static str, u64)>,
    /// This process holds the engine dataset "@t" open while the command runs.
    pub(super) held: Option<EngineKind>,
    /// Run without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so that
    /// permission bits stop even root (a read-only file or directory, mode
    /// 000, are then what they are for any other user).
    pub(super) nocaps: bool,
    /// Variables set for the command ("@x" in a value stands for x of the
    /// case's directory), after the AWS ones are cleared.
    pub(super) env: Vec<(&'static str, &'static str)>,
}

pub(super) fn case(name: &str, fixture: Fixture, args: &[&str], expect: Expect) -> Case {
    let args = args.iter().map(|s| s.to_string()).collect();
    Case {
        name: name.to_string(),
        fixture,
        args,
        expect,
        fsize: None,
        locked: false,
        fault: None,
        held: None,
        nocaps: false,
        env: Vec::new(),
    }
}

impl Case {
    pub(super) fn fsize(mut self, bytes: u64) -> Self {
        self.fsize = Some(bytes);
        self
    }
    pub(super) fn locked(mut self) -> Self {
        self.locked = true;
        self
    }
    pub(super) fn fault(mut self, name: &'static str, at: u64) -> Self {
        self.fault = Some((name, at));
        self
    }

    pub(super) fn held(mut self, kind: EngineKind) -> Self {
        self.held = Some(kind);
        self
    }

    pub(super) fn nocaps(mut self) -> Self {
        self.nocaps = true;
        self
    }

    pub(super) fn env(mut self, vars: &[(&'static str, &'static str)]) -> Self {
        self.env.extend_from_slice(vars);
        self
    }
}

/// Keys in the environment, for the cases that reach a store.
pub(super) const KEYS: [(&str, &str); 2] = [("AWS_ACCESS_KEY_ID", "AKIATEST"), ("AWS_SECRET_ACCESS_KEY", "s3cret")];
/// The profiles of `aws_files`, in its files.
pub(super) const PROFILE_FILES: [(&str, &str); 2] =
    [("AWS_SHARED_CREDENTIALS_FILE", "@aws-credentials"), ("AWS_CONFIG_FILE", "@aws-config")];
