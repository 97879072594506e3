//! Which processes belong to the watched run: the child and everything it started, found through
//! /proc (Linux, proc(5): `/proc/PID/stat` gives the state, the parent and the process group).
//!
//! Per sample only the pids the GPU source lists are looked up, each by walking its parents up
//! to the watcher (a handful of small reads, cached per pid), rather than scanning all of /proc
//! ten times a second. The watcher is a child subreaper (process.rs), so a grandchild whose
//! parent exited still has the watcher as an ancestor. Elsewhere only the child's own pid is
//! known to be the run's.

use std::collections::HashMap;

/// The fields of `/proc/PID/stat` used here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub state: char,
    pub ppid: u32,
    pub pgrp: u32,
}

/// Parses a `/proc/PID/stat` line. The command name is in parentheses and may itself contain
/// spaces and parentheses, so the fields are read after the *last* `)` (proc(5)).
pub fn parse_stat(line: &str) -> Option<Stat> {
    let rest = &line[line.rfind(')')? + 1..];
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    Some(Stat { state, ppid, pgrp })
}

fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process in /proc with its stat.
fn all() -> Vec<(u32, Stat)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        Some((pid, stat(pid)?))
    })
    .collect()
}

/// Every descendant of `root` (zombies included), not `root` itself.
pub fn descendants(root: u32) -> Vec<u32> {
    let procs = all();
    let mut out = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (pid, s) in &procs {
            if s.ppid == p && *pid != root && !out.contains(pid) {
                out.push(*pid);
                frontier.push(*pid);
            }
        }
    }
    out
}

/// Descendants of `root` in process group `pgrp` (zombies included), and theirs.
pub fn descendants_in_group(root: u32, pgrp: u32) -> Vec<u32> {
    let procs = all();
    let in_group: Vec<u32> = descendants(root)
        .into_iter()
        .filter(|p| procs.iter().any(|(q, s)| q == p && s.pgrp == pgrp))
        .collect();
    let mut out = in_group.clone();
    for p in in_group {
        for d in descendants(p) {
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

/// The direct children of `parent` in process group `pgrp` other than its leader (the run's
/// orphans re-parented to the watcher).
pub fn children_in_group(parent: u32, pgrp: u32) -> Vec<u32> {
    all()
        .into_iter()
        .filter(|(pid, s)| s.ppid == parent && s.pgrp == pgrp && *pid != pgrp)
        .map(|(pid, _)| pid)
        .collect()
}

/// True while `pid` runs (exists and is not a zombie waiting to be reaped).
pub fn is_living(pid: u32) -> bool {
    stat(pid).is_some_and(|s| s.state != 'Z' && s.state != 'X')
}

/// True while a running process is in process group `pgrp`.
pub fn living_in_group(pgrp: u32) -> bool {
    all()
        .iter()
        .any(|(_, s)| s.pgrp == pgrp && s.state != 'Z' && s.state != 'X')
}

/// Decides, pid by pid, whether a process belongs to the run.
#[derive(Debug, Clone)]
pub struct Membership {
    /// The watcher's own pid (the subreaper every descendant hangs under).
    watcher: u32,
    /// The watched child.
    child: u32,
    known: HashMap<u32, bool>,
}

/// Ancestors looked at, at most (a bound against a corrupt or cyclic /proc).
const MAX_DEPTH: usize = 64;

impl Membership {
    pub fn new(watcher: u32, child: u32) -> Membership {
        Membership {
            watcher,
            child,
            known: HashMap::new(),
        }
    }

    pub fn child(&self) -> u32 {
        self.child
    }

    /// True when `pid` is the child or one of its descendants.
    pub fn contains(&mut self, pid: u32) -> bool {
        if pid == self.child {
            return true;
        }
        if pid == self.watcher {
            return false;
        }
        if let Some(k) = self.known.get(&pid) {
            return *k;
        }
        let mine = self.walk(pid);
        self.known.insert(pid, mine);
        mine
    }

    fn walk(&self, pid: u32) -> bool {
        let mut p = pid;
        for _ in 0..MAX_DEPTH {
            let Some(s) = stat(p) else { return false };
            if s.ppid == self.child || s.ppid == self.watcher {
                return true;
            }
            if s.ppid <= 1 {
                return false;
            }
            p = s.ppid;
        }
        false
    }

    /// Forgets pids no longer listed, so a reused pid is looked up afresh.
    pub fn retain(&mut self, listed: &[u32]) {
        self.known.retain(|pid, _| listed.contains(pid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_come_after_the_last_parenthesis() {
        let s = parse_stat("4242 (python (train) x) S 4200 4242 4200 0 -1 4194560").unwrap();
        assert_eq!(
            s,
            Stat {
                state: 'S',
                ppid: 4200,
                pgrp: 4242
            }
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) S notanumber 1"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_grandchild_belongs_to_the_run_and_a_stranger_does_not() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 5 & echo $!; wait"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        let grandchild: u32 = line.trim().parse().unwrap();
        let me = std::process::id();
        let mut m = Membership::new(me, child.id());
        assert!(m.contains(child.id()));
        assert!(m.contains(grandchild));
        assert!(!m.contains(me), "the watcher itself is not the run");
        assert!(!m.contains(1), "init is not the run");
        assert!(descendants(me).contains(&grandchild));
        std::process::Command::new("kill")
            .arg(grandchild.to_string())
            .status()
            .unwrap();
        child.wait().unwrap();
    }
}
