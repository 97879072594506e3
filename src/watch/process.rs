//! The watched command as a child process: started in its own process group with stdin passed
//! through and stdout/stderr piped (so every line can be read as it passes), signals to the
//! watcher forwarded to it, and nothing of it left behind when the watcher ends.
//!
//! How nothing is left behind (Unix): the child leads its own process group, so one `kill(-pgid)`
//! reaches every process that did not leave it; on Linux the watcher is also a *child
//! subreaper* (prctl(2) `PR_SET_CHILD_SUBREAPER`), so descendants whose parent exited are
//! re-parented to the watcher instead of init and can still be found under it in /proc, even if
//! they started their own session; and the child gets `PR_SET_PDEATHSIG = SIGKILL`, so even a
//! watcher killed with SIGKILL takes its direct child along. When the terminal's foreground
//! group is the watcher's, it is handed to the child's group while it runs (as a shell does for
//! a foreground job, POSIX tcsetpgrp(3)): Ctrl-C then reaches the child first, and a child that
//! reads the terminal is not stopped by SIGTTIN.

use super::Io;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::time::Duration;
#[cfg(unix)]
use std::time::Instant;

/// What to run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandSpec {
    pub program: OsString,
    pub args: Vec<OsString>,
    /// Working directory; `None` = the watcher's.
    pub cwd: Option<PathBuf>,
    /// Variables set on top of the watcher's environment (the retry's fix).
    pub env: Vec<(OsString, OsString)>,
}

impl CommandSpec {
    /// The command line as the user would type it, for messages.
    pub fn display(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| {
                let s = a.to_string_lossy();
                if s.is_empty() || s.contains(|c: char| c.is_whitespace() || c == '\'') {
                    format!("'{}'", s.replace('\'', "'\\''"))
                } else {
                    s.into_owned()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// How the child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Exit {
    /// The exit code, or 128 + the signal number for a child killed by a signal (the shell's
    /// convention, POSIX sh "Exit Status for Commands").
    pub code: i32,
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
}

impl Exit {
    fn from_status(s: ExitStatus) -> Exit {
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            if let Some(sig) = s.signal() {
                return Exit {
                    code: 128 + sig,
                    signal: Some(sig),
                };
            }
        }
        Exit {
            code: s.code().unwrap_or(1),
            signal: None,
        }
    }
}

/// A running child and its group.
pub struct Running {
    child: Child,
    exit: Option<Exit>,
    /// Every descendant of the watcher is the run's ([`Io::Terminal`]); only Unix signals them.
    #[cfg(unix)]
    whole_process: bool,
    #[cfg(unix)]
    terminal: Option<unix::Foreground>,
}

/// SIGTERM: the signal [`Running::signal`] asks a run to end with (elsewhere any signal ends it).
pub const SIGTERM: i32 = 15;

/// Starts `spec`. `Err` is one line naming the program and why it could not start.
/// With [`Io::Terminal`] (the CLI, a process of its own) stdin is the watcher's, the terminal's
/// foreground is handed to the child, and every descendant of the watcher is the run's; with
/// [`Io::Captured`] (the app, which has other children and may watch one run while a test
/// watches another) the child reads nothing and the run is its process group and descendants.
pub fn spawn(
    spec: &CommandSpec,
    io: Io,
) -> Result<(Running, ChildStdout, ChildStderr), super::WatchError> {
    let cli = io == Io::Terminal;
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .stdin(if cli { Stdio::inherit() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(d) = &spec.cwd {
        cmd.current_dir(d);
    }
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    #[cfg(unix)]
    let terminal = unix::prepare(&mut cmd, cli);
    let mut child = cmd.spawn().map_err(|e| {
        let cwd = spec
            .cwd
            .as_ref()
            .map(|d| format!(" in {}", d.display()))
            .unwrap_or_default();
        super::WatchError::Refused(format!(
            "cannot start {}{cwd}: {e}",
            spec.program.to_string_lossy()
        ))
    })?;
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(super::WatchError::Pipes);
    };
    let running = Running {
        #[cfg(unix)]
        terminal: terminal.then(|| unix::Foreground::hand_to(child.id())),
        child,
        exit: None,
        #[cfg(unix)]
        whole_process: cli,
    };
    Ok((running, out, err))
}

impl Running {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exit, once the child has ended (does not wait).
    pub fn poll(&mut self) -> Option<Exit> {
        if self.exit.is_none() {
            let exit = match self.child.try_wait() {
                Ok(Some(s)) => Some(Exit::from_status(s)),
                Ok(None) => None,
                // Already collected by someone else (ECHILD): ended, its status unknown.
                Err(_) => Some(Exit {
                    code: 1,
                    signal: None,
                }),
            };
            if exit.is_some() {
                self.exit = exit;
                #[cfg(unix)]
                drop(self.terminal.take());
            }
        }
        self.exit
    }

    /// Sends `signal` to the child's whole group and to every other descendant (Unix); elsewhere
    /// any signal ends the child.
    pub fn signal(&mut self, signal: i32) {
        #[cfg(unix)]
        unix::signal_all(self.child.id(), signal, self.whole_process);
        #[cfg(not(unix))]
        {
            let _ = signal;
            let _ = self.child.kill();
        }
    }

    /// Ends whatever is left of the run: SIGTERM to the group and every descendant, up to
    /// `grace` for them to go, then SIGKILL; reaps what it ended. Called on every way out of the
    /// watcher (and by `Drop`).
    pub fn end_all(&mut self, grace: Duration) {
        #[cfg(unix)]
        {
            let (pid, all) = (self.child.id(), self.whole_process);
            self.poll();
            if !unix::anything_left(pid, all) {
                if self.exit.is_some() {
                    unix::reap_orphans(pid, all);
                }
                return;
            }
            unix::signal_all(pid, unix::SIGTERM, all);
            let until = Instant::now() + grace;
            while Instant::now() < until && unix::anything_left(pid, all) {
                std::thread::sleep(Duration::from_millis(20));
                // Orphans are reaped only once the direct child is: waitpid(-1) must not take
                // the child's status from `Child::try_wait`.
                if self.poll().is_some() {
                    unix::reap_orphans(pid, all);
                }
            }
            if unix::anything_left(pid, all) {
                unix::signal_all(pid, unix::SIGKILL, all);
            }
            let until = Instant::now() + Duration::from_secs(2);
            while self.poll().is_none() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(10));
            }
            if self.exit.is_some() {
                unix::reap_orphans(pid, all);
            }
        }
        #[cfg(not(unix))]
        {
            let _ = grace;
            if self.poll().is_none() {
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.end_all(Duration::from_millis(500));
    }
}

/// Signals delivered to the watcher (SIGINT, SIGTERM, SIGHUP), to forward to the child.
pub mod signals {
    use std::sync::atomic::{AtomicI32, Ordering};

    static PENDING: AtomicI32 = AtomicI32::new(0);

    /// Catches SIGINT, SIGTERM and SIGHUP from now on: they no longer end the watcher, they are
    /// kept for [`take`] (the handler only stores the number: async-signal-safe).
    pub fn install() {
        #[cfg(unix)]
        super::unix::catch(on_signal);
    }

    #[cfg(unix)]
    extern "C" fn on_signal(sig: i32) {
        PENDING.store(sig, Ordering::SeqCst);
    }

    /// The last signal received since the previous call, if any.
    pub fn take() -> Option<i32> {
        match PENDING.swap(0, Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }
}

#[cfg(unix)]
mod unix {
    use super::super::tree;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    pub const SIGHUP: i32 = 1;
    pub const SIGINT: i32 = 2;
    pub const SIGKILL: i32 = 9;
    pub use super::SIGTERM;
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    const SIGTTOU: i32 = 22;
    const SIG_DFL: usize = 0;
    const SIG_IGN: usize = 1;
    const WNOHANG: i32 = 1;

    unsafe extern "C" {
        fn kill(pid: i32, sig: i32) -> i32;
        fn signal(sig: i32, handler: usize) -> usize;
        fn isatty(fd: i32) -> i32;
        fn getpgrp() -> i32;
        fn tcgetpgrp(fd: i32) -> i32;
        fn tcsetpgrp(fd: i32, pgrp: i32) -> i32;
        fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
        #[cfg(target_os = "linux")]
        fn prctl(option: i32, arg2: u64, arg3: u64, arg4: u64, arg5: u64) -> i32;
    }

    #[cfg(target_os = "linux")]
    const PR_SET_PDEATHSIG: i32 = 1;
    #[cfg(target_os = "linux")]
    const PR_SET_CHILD_SUBREAPER: i32 = 36;

    /// Sets up `cmd` to lead its own process group and die with the watcher; makes the watcher
    /// a subreaper. True when the terminal should be handed to the child (`terminal` is asked
    /// for and the watcher is in the foreground of a terminal on stdin).
    pub fn prepare(cmd: &mut Command, terminal: bool) -> bool {
        // SAFETY: plain libc calls with constant arguments.
        let take_terminal = terminal && unsafe { isatty(0) == 1 && tcgetpgrp(0) == getpgrp() };
        #[cfg(target_os = "linux")]
        // SAFETY: prctl with an integer option; failure only means orphans go to init.
        unsafe {
            prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        }
        cmd.process_group(0);
        // SAFETY: the closure runs between fork and exec and calls only async-signal-safe
        // functions (prctl, signal, tcsetpgrp, getpgrp), allocating nothing.
        unsafe {
            cmd.pre_exec(move || {
                #[cfg(target_os = "linux")]
                prctl(PR_SET_PDEATHSIG, SIGKILL as u64, 0, 0, 0);
                if take_terminal {
                    // Both sides set the foreground group (as shells do), so the child never
                    // reads the terminal before it is its own; SIGTTOU would stop a background
                    // process that changes it.
                    #[cfg(any(target_os = "linux", target_os = "macos"))]
                    signal(SIGTTOU, SIG_IGN);
                    tcsetpgrp(0, getpgrp());
                    #[cfg(any(target_os = "linux", target_os = "macos"))]
                    signal(SIGTTOU, SIG_DFL);
                }
                Ok(())
            });
        }
        take_terminal
    }

    /// The terminal's foreground, handed to the child's group while it runs; given back to the
    /// watcher's group when dropped.
    pub struct Foreground(i32);

    impl Foreground {
        pub fn hand_to(child: u32) -> Foreground {
            // SAFETY: libc calls on fd 0; SIGTTOU is ignored so a background watcher may change
            // the foreground group (tcsetpgrp(3)).
            unsafe {
                #[cfg(any(target_os = "linux", target_os = "macos"))]
                signal(SIGTTOU, SIG_IGN);
                tcsetpgrp(0, child as i32);
                Foreground(getpgrp())
            }
        }
    }

    impl Drop for Foreground {
        fn drop(&mut self) {
            // SAFETY: as above.
            unsafe {
                tcsetpgrp(0, self.0);
            }
        }
    }

    pub fn catch(handler: extern "C" fn(i32)) {
        for s in [SIGINT, SIGTERM, SIGHUP] {
            // SAFETY: the handler only stores into an atomic (async-signal-safe).
            unsafe {
                signal(s, handler as usize);
            }
        }
    }

    /// The run's processes besides its group: with `all`, every descendant of the watcher
    /// (those that left the group, or were re-parented to the subreaper); otherwise the
    /// child's own descendants and the watcher's in the child's group.
    fn run_descendants(child: u32, all: bool) -> Vec<u32> {
        if all {
            tree::descendants(std::process::id())
        } else {
            tree::descendants(child)
                .into_iter()
                .chain(tree::descendants_in_group(std::process::id(), child))
                .collect()
        }
    }

    /// `sig` to the child's group and to the run's other processes (see `run_descendants`).
    pub fn signal_all(child: u32, sig: i32, all: bool) {
        // SAFETY: kill(2) on a process group id and on pids.
        unsafe {
            kill(-(child as i32), sig);
            kill(child as i32, sig);
            for pid in run_descendants(child, all) {
                kill(pid as i32, sig);
            }
        }
    }

    /// True while a living (not zombie) member of the child's group or of the run's other
    /// processes remains.
    pub fn anything_left(child: u32, all: bool) -> bool {
        #[cfg(target_os = "linux")]
        {
            tree::living_in_group(child)
                || run_descendants(child, all).into_iter().any(tree::is_living)
        }
        #[cfg(not(target_os = "linux"))]
        // SAFETY: signal 0 only checks for existence (zombies count too: the caller reaps).
        unsafe {
            kill(-(child as i32), 0) == 0
        }
    }

    /// Collects the exit status of the run's ended processes re-parented to the watcher: with
    /// `all` every ended child of the watcher (the direct child was already collected),
    /// otherwise only those in the child's group, so that another run's or another part of the
    /// program's children keep their status for their own owners.
    pub fn reap_orphans(child: u32, all: bool) {
        let mut status = 0;
        if all {
            // SAFETY: waitpid with WNOHANG on any child.
            while unsafe { waitpid(-1, &mut status, WNOHANG) } > 0 {}
            return;
        }
        for pid in tree::children_in_group(std::process::id(), child) {
            // SAFETY: waitpid with WNOHANG on one pid that is our child.
            unsafe {
                waitpid(pid as i32, &mut status, WNOHANG);
            }
        }
    }
}
