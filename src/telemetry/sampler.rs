//! The sampler thread: owns a [`Source`], samples it at a fixed rate and sends each snapshot over
//! a channel, so the UI never waits on the driver (DESIGN.md, "the UI never blocks on NVML").

use super::sample::{Snapshot, SourceState};
use super::source::Source;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Handle to a running sampler. Dropping it (or calling [`Sampler::stop`]) stops the thread
/// within one sampling call; the thread also stops when the receiver is dropped or the source
/// is finished (end of a replay).
pub struct Sampler {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Starts sampling `source` every `interval` (the first sample is taken at once).
    /// An interval of zero samples as fast as the receiver takes snapshots (used for replays).
    pub fn start(source: Box<dyn Source>, interval: Duration) -> (Sampler, Receiver<Snapshot>) {
        // A bounded channel: a receiver that stops reading (a frozen UI) cannot make the
        // sampler queue snapshots without limit; 64 is about a minute at the default 1 Hz.
        let (tx, rx) = mpsc::sync_channel(64);
        let (stop_tx, stop_rx) = mpsc::channel();
        let (kind, told) = (source.kind(), tx.clone());
        let thread = match std::thread::Builder::new()
            .name("gpu-sampler".into())
            .spawn(move || run(source, interval, &tx, &stop_rx))
        {
            Ok(t) => Some(t),
            Err(e) => {
                // The receiver learns why nothing comes, as a reading whose state says it.
                told.try_send(Snapshot {
                    time_ms: super::sample::now_ms(),
                    source: kind,
                    state: SourceState::Error(format!("cannot start the sampling thread: {e}")),
                    gpus: Vec::new(),
                    notes: Vec::new(),
                })
                .ok();
                None
            }
        };
        (
            Sampler {
                stop: Some(stop_tx),
                thread,
            },
            rx,
        )
    }

    /// Stops the thread and waits for it.
    pub fn stop(mut self) {
        self.shutdown();
    }

    /// True while the sampling thread is alive.
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    fn shutdown(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn run(
    mut source: Box<dyn Source>,
    interval: Duration,
    tx: &SyncSender<Snapshot>,
    stop: &Receiver<()>,
) {
    for snap in source.backfill(interval) {
        if !deliver(snap, tx, stop) {
            return;
        }
    }
    let mut next = Instant::now();
    loop {
        if !deliver(source.sample(), tx, stop) || source.finished() {
            return;
        }
        // Fixed-rate ticks: the time a sample took is not added to the interval.
        next += interval;
        let wait = next.saturating_duration_since(Instant::now());
        if wait.is_zero() {
            next = Instant::now();
        }
        if stopped(stop, wait) {
            return;
        }
    }
}

/// Sends one snapshot, waiting while the channel is full (nothing is dropped, which a replay
/// needs) but still answering a stop request. False when the sampler should end.
fn deliver(mut snap: Snapshot, tx: &SyncSender<Snapshot>, stop: &Receiver<()>) -> bool {
    loop {
        match tx.try_send(snap) {
            Ok(()) => return true,
            Err(TrySendError::Disconnected(_)) => return false,
            Err(TrySendError::Full(s)) => {
                snap = s;
                if stopped(stop, Duration::from_millis(10)) {
                    return false;
                }
            }
        }
    }
}

/// Waits up to `wait`; true if the handle asked to stop (or is gone).
fn stopped(stop: &Receiver<()>, wait: Duration) -> bool {
    !matches!(stop.recv_timeout(wait), Err(RecvTimeoutError::Timeout))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::sample::{SourceKind, SourceState};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    struct Counter(u64, u64);
    impl Source for Counter {
        fn kind(&self) -> SourceKind {
            SourceKind::Demo
        }
        fn sample(&mut self) -> Snapshot {
            self.0 += 1;
            Snapshot {
                time_ms: self.0,
                ..Default::default()
            }
        }
        fn finished(&self) -> bool {
            self.0 >= self.1
        }
    }

    #[test]
    fn delivers_in_order_and_stops_when_source_is_finished() {
        let (s, rx) = Sampler::start(Box::new(Counter(0, 5)), Duration::ZERO);
        let times: Vec<u64> = rx.iter().map(|s| s.time_ms).collect();
        assert_eq!(times, vec![1, 2, 3, 4, 5]);
        s.stop();
    }

    #[test]
    fn stop_is_prompt_even_with_a_long_interval() {
        let (s, rx) = Sampler::start(Box::new(Counter(0, u64::MAX)), Duration::from_secs(3600));
        assert_eq!(rx.recv().map(|s| s.state), Ok(SourceState::Ok));
        let t = Instant::now();
        s.stop();
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(rx.recv().is_err(), "channel closes after stop");
    }

    #[test]
    fn stop_is_prompt_while_the_receiver_is_not_reading() {
        struct Tracked(Arc<AtomicU64>);
        impl Source for Tracked {
            fn kind(&self) -> SourceKind {
                SourceKind::Demo
            }
            fn sample(&mut self) -> Snapshot {
                Snapshot {
                    time_ms: self.0.fetch_add(1, Ordering::SeqCst) + 1,
                    ..Default::default()
                }
            }
        }
        let taken = Arc::new(AtomicU64::new(0));
        let (s, rx) = Sampler::start(Box::new(Tracked(taken.clone())), Duration::ZERO);
        // Wait until the channel is full (64) and one more sample waits to be sent; nobody reads.
        while taken.load(Ordering::SeqCst) < 65 {
            std::thread::yield_now();
        }
        let t = Instant::now();
        s.stop();
        assert!(t.elapsed() < Duration::from_secs(5));
        let times: Vec<u64> = rx.try_iter().map(|s| s.time_ms).collect();
        assert_eq!(
            times,
            (1..=64).collect::<Vec<u64>>(),
            "delivered in order, the rest never sent"
        );
    }
}
