//! `vram-doctor`: with a subcommand, the command line; without one, the desktop app.
//!
//! On Windows the binary is a GUI-subsystem program, so a double-click opens the app without a
//! console window. Such a program starts without standard handles when run from a console, so
//! before anything prints it attaches to the console of the process that started it
//! ([`console::attach_parent`]); output redirected to a file or a pipe is left as it is.

// Windows: no console window for the desktop app (the Rust reference, "The windows_subsystem
// attribute"); the command line attaches to its parent's console below.
#![cfg_attr(windows, windows_subsystem = "windows")]

use clap::Parser;
use std::process::ExitCode;
use vram_doctor::cli::{Cli, run};
use vram_doctor::tabs::Tab;
use vram_doctor::ui;

fn main() -> ExitCode {
    #[cfg(windows)]
    console::attach_parent();
    let cli = Cli::parse();
    match cli.command {
        Some(cmd) => run(cmd),
        None => match ui::run(
            cli.tab.as_deref().and_then(Tab::from_name),
            cli.prometheus,
            cli.open,
        ) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(vram_doctor::cli::EXIT_ENVIRONMENT)
            }
        },
    }
}

/// The parent console for a GUI-subsystem program (Win32 console API as documented on
/// learn.microsoft.com: `GetStdHandle`, `AttachConsole(ATTACH_PARENT_PROCESS)`, `CreateFileW` on
/// `CONOUT$`/`CONIN$`, `SetStdHandle`). Rust's standard library asks `GetStdHandle` at every
/// write (library/std/src/sys/stdio/windows.rs, `get_handle`), so handles set here are used by
/// every later `println!`.
#[cfg(windows)]
mod console {
    use std::ffi::c_void;

    type Handle = *mut c_void;
    const ATTACH_PARENT_PROCESS: u32 = u32::MAX;
    const STD_INPUT_HANDLE: u32 = -10i32 as u32;
    const STD_OUTPUT_HANDLE: u32 = -11i32 as u32;
    const STD_ERROR_HANDLE: u32 = -12i32 as u32;
    const GENERIC_READ: u32 = 0x8000_0000;
    const GENERIC_WRITE: u32 = 0x4000_0000;
    const FILE_SHARE_READ: u32 = 1;
    const FILE_SHARE_WRITE: u32 = 2;
    const OPEN_EXISTING: u32 = 3;
    const INVALID_HANDLE_VALUE: Handle = -1isize as Handle;

    #[link(name = "kernel32")]
    unsafe extern "system" {
        fn GetStdHandle(which: u32) -> Handle;
        fn SetStdHandle(which: u32, handle: Handle) -> i32;
        fn AttachConsole(pid: u32) -> i32;
        fn CreateFileW(
            name: *const u16,
            access: u32,
            share: u32,
            security: *mut c_void,
            disposition: u32,
            flags: u32,
            template: Handle,
        ) -> Handle;
    }

    fn missing(which: u32) -> bool {
        // SAFETY: plain query of this process's standard handle.
        let h = unsafe { GetStdHandle(which) };
        h.is_null() || h == INVALID_HANDLE_VALUE
    }

    /// Attaches to the parent's console when a standard handle is missing, and points the
    /// missing ones at it. Started from Explorer there is no parent console and nothing happens.
    pub fn attach_parent() {
        let std = [STD_INPUT_HANDLE, STD_OUTPUT_HANDLE, STD_ERROR_HANDLE];
        let gaps: Vec<u32> = std.into_iter().filter(|&w| missing(w)).collect();
        // SAFETY: no pointers; fails harmlessly when there is no parent console or one is attached.
        if gaps.is_empty() || unsafe { AttachConsole(ATTACH_PARENT_PROCESS) } == 0 {
            return;
        }
        for which in gaps {
            if !missing(which) {
                continue; // AttachConsole filled it
            }
            let name = if which == STD_INPUT_HANDLE {
                "CONIN$"
            } else {
                "CONOUT$"
            };
            let wide: Vec<u16> = name.encode_utf16().chain([0]).collect();
            // SAFETY: a NUL-terminated name alive for the call; no security attributes or template.
            let h = unsafe {
                CreateFileW(
                    wide.as_ptr(),
                    GENERIC_READ | GENERIC_WRITE,
                    FILE_SHARE_READ | FILE_SHARE_WRITE,
                    std::ptr::null_mut(),
                    OPEN_EXISTING,
                    0,
                    std::ptr::null_mut(),
                )
            };
            if h != INVALID_HANDLE_VALUE {
                // SAFETY: a handle just opened, owned by the process from now on.
                unsafe { SetStdHandle(which, h) };
            }
        }
    }
}
