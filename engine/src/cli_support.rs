//! Small helpers shared by the CLI commands: progress bars (drawn only on a terminal).

use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar on stderr; hidden when stderr is not a terminal or `KINSEY_NO_PROGRESS` is set.
pub fn bar(len: u64, msg: &str) -> ProgressBar {
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
pub fn spinner(msg: &str) -> ProgressBar {
    if std::env::var_os("KINSEY_NO_PROGRESS").is_some() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new_spinner();
    pb.set_message(msg.to_string());
    pb.enable_steady_tick(std::time::Duration::from_millis(120));
    pb
}
