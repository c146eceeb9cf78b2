//! Everything that touches the terminal: progress bars (drawn only on a terminal, through
//! the libraries' [`kinsey_core::Progress`] callback) and diagnostic lines on stdout.

use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar on stderr; hidden when stderr is not a terminal or `KINSEY_NO_PROGRESS` is set.
pub(crate) fn bar(len: u64, msg: &str) -> ProgressBar {
    if std::env::var_os("KINSEY_NO_PROGRESS").is_some() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    if let Ok(style) =
        ProgressStyle::with_template("{msg:32} [{bar:30}] {pos}/{len} ({elapsed}, eta {eta})")
    {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(msg.to_string());
    pb
}

/// A spinner for a step without a known length (hidden under `KINSEY_NO_PROGRESS`).
pub(crate) fn spinner(msg: &str) -> ProgressBar {
    if std::env::var_os("KINSEY_NO_PROGRESS").is_some() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new_spinner();
    pb.set_message(msg.to_string());
    pb.enable_steady_tick(std::time::Duration::from_millis(120));
    pb
}

/// Print a diagnostic line to stdout (prefixed).
pub(crate) fn print_diagnostic(line: &str) {
    println!("{} {line}", kinsey_dp::release::NOT_PRIVATE_PREFIX);
}

/// The libraries' [`kinsey_core::Progress`] drawn with indicatif on stderr: a bar when the
/// total is known, a spinner otherwise; nothing when stderr is not a terminal or
/// `KINSEY_NO_PROGRESS` is set.
#[derive(Debug, Default)]
pub(crate) struct Bars {
    current: std::sync::Mutex<Option<ProgressBar>>,
}

impl Bars {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<ProgressBar>> {
        // A panic while drawing leaves nothing worth protecting: take the bar back.
        self.current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl kinsey_core::Progress for Bars {
    fn begin(&self, task: &str, total: Option<u64>) {
        let pb = match total {
            Some(n) => bar(n, task),
            None => spinner(task),
        };
        if let Some(old) = self.slot().replace(pb) {
            old.finish_and_clear();
        }
    }

    fn advance(&self, n: u64) {
        if let Some(pb) = self.slot().as_ref() {
            pb.inc(n);
        }
    }

    fn end(&self) {
        if let Some(pb) = self.slot().take() {
            pb.finish_and_clear();
        }
    }
}
