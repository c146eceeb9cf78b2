//! `kinsey bench figures`: the table of figures `benches/gpu-figures.sh` writes. Every step
//! of the script leaves `RAW/<step>.json`: the JSON lines its bench command printed, then
//! one line `{"kinsey_step": {...}}` with the step's command, exit status and seconds. This
//! reads them all (in the order the script ran them) and writes `figures.md` (a markdown
//! table headed by the machine, from `RAW/machine.txt`) and `figures.jsonl` (one JSON line
//! per figure) into OUT. A step that failed or ran out of time is listed as such, with no
//! figure: a figure is only what a command measured.

use kinsey_core::{Error, Result};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::path::Path;

/// One measured figure.
#[derive(Debug, Clone, PartialEq)]
struct Figure {
    step: String,
    figure: String,
    value: f64,
    unit: &'static str,
    device: String,
    size: String,
}

/// What the script recorded of a step.
#[derive(Debug, Clone, Default)]
struct Step {
    name: String,
    command: String,
    rc: i64,
    seconds: f64,
    limit: f64,
}

/// The number at `key` of `v`.
fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

/// The string at `key` of `v`.
fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Where a step ran when its output does not say: its command's device argument.
fn device_of_command(command: &str) -> String {
    let words: Vec<&str> = command.split_whitespace().collect();
    for flag in ["--crypto-device", "--device"] {
        if let Some(k) = words.iter().position(|w| *w == flag)
            && let Some(d) = words.get(k + 1)
        {
            return d.to_uppercase();
        }
    }
    String::new()
}

/// The figures of one line a bench command printed (none for a line it does not know).
fn figures_of(step: &Step, v: &Value) -> Vec<Figure> {
    let mut out = Vec::new();
    let mut push = |figure: String, value: Option<f64>, unit, device: &str, size: String| {
        if let Some(value) = value.filter(|x| x.is_finite()) {
            out.push(Figure {
                step: step.name.clone(),
                figure,
                value,
                unit,
                device: device.to_string(),
                size,
            });
        }
    };
    if v.get("encrypt_per_s").is_some() {
        let bits = num(v, "bits").unwrap_or(0.0);
        let size = format!(
            "batches of {}, {} threads",
            num(v, "count").unwrap_or(0.0),
            num(v, "threads").unwrap_or(0.0)
        );
        let device = text(v, "device");
        for (key, what) in [
            ("encrypt_per_s", "encryption"),
            ("encrypt_key_holder_per_s", "encryption (key holder)"),
            ("decrypt_per_s", "CRT decryption"),
            ("add_per_s", "addition"),
            ("mul_plain_per_s", "multiplication by a plaintext"),
            ("rerandomize_per_s", "re-randomisation"),
        ] {
            push(
                format!("Paillier-{bits} {what}"),
                num(v, key),
                "/s",
                &device,
                size.clone(),
            );
        }
        // First use of every operation, one value each: on a GPU its pipelines' compiles.
        push(
            format!("Paillier-{bits} warm-up, every operation once"),
            num(v, "warmup_seconds"),
            "s",
            &device,
            size.clone(),
        );
    } else if let Some(ops) = v.get("ops").and_then(Value::as_array) {
        let bits = num(v, "bits").unwrap_or(0.0);
        let device = text(v, "device");
        let size = format!("batches up to {}", num(v, "max_batch").unwrap_or(0.0));
        for op in ops {
            // No crossover up to the largest batch: the GPU never won; said as such.
            let name = text(op, "op");
            match num(op, "crossover") {
                Some(c) => push(
                    format!("Paillier-{bits} GPU crossover, {name}"),
                    Some(c),
                    "items",
                    &device,
                    size.clone(),
                ),
                None => push(
                    format!("Paillier-{bits} GPU crossover, {name}: none (CPU faster)"),
                    num(v, "max_batch"),
                    "items (largest tried)",
                    &device,
                    size.clone(),
                ),
            }
        }
    } else if let Some(stages) = v.get("stages").and_then(Value::as_array) {
        let size = format!(
            "K = {}, d = {}",
            num(v, "parties").unwrap_or(0.0),
            num(v, "dim").unwrap_or(0.0)
        );
        let device = format!("crypto on {}", device_of_command(&step.command));
        push(
            "protocol, whole run".into(),
            num(v, "wall_seconds"),
            "s",
            &device,
            size.clone(),
        );
        for st in stages {
            push(
                format!("protocol, {}", text(st, "stage")),
                num(st, "wall_seconds"),
                "s",
                &device,
                size.clone(),
            );
        }
    } else if let Some(adapter) = v.get("adapter") {
        out.extend(probe_figures(step, adapter, v));
    } else if v.get("steps_per_second").is_some() {
        out.extend(decay_figures(step, v));
    } else if v.get("rows_per_s").is_some() {
        out.extend(train_figures(step, v));
    } else if let Some(more) = device_line_figures(step, v) {
        out.extend(more);
    } else if let Some(s) = num(v, "wall_seconds").filter(|_| v.get("command").is_some()) {
        push(
            format!("`{}`, wall time", text(v, "command")),
            Some(s),
            "s",
            &device_of_command(&text(v, "command")),
            String::new(),
        );
    }
    out
}

/// The figures of a `bench train` line: the fit, its passes, one full pass alone where
/// the fit ran it and the rate at which it reads the rows' bytes (beside the probe's
/// in-device bandwidth: the pass's bound), and the upload.
fn train_figures(step: &Step, v: &Value) -> Vec<Figure> {
    let size = format!(
        "{} x {}",
        num(v, "rows").unwrap_or(0.0),
        num(v, "dim").unwrap_or(0.0)
    );
    let (device, pass_device) = (text(v, "device"), text(v, "pass_device"));
    let pass_s = num(v, "pass_seconds");
    let read = num(v, "pass_bytes").zip(pass_s).map(|(b, s)| b / s / 1e9);
    let upload = num(v, "upload_seconds").filter(|&u| u > 0.0);
    [
        (
            "training, Newton to the tolerance",
            num(v, "seconds"),
            "s",
            &device,
        ),
        (
            "training, row passes",
            num(v, "rows_per_s"),
            "rows/s",
            &device,
        ),
        (
            "training, one full pass (loss and gradient)",
            pass_s,
            "s",
            &pass_device,
        ),
        (
            "training, one full pass: row bytes read",
            read,
            "GB/s",
            &pass_device,
        ),
        ("training, rows to the device", upload, "s", &pass_device),
    ]
    .into_iter()
    .filter_map(|(f, value, unit, dev)| figure(step, (f.into(), value, unit), dev, size.clone()))
    .collect()
}

/// The figures of the device lines of `bench gpu-probe` after its first (a compile, the
/// pipeline cache) and of `bench gpu-private`; `None` for any other line.
fn device_line_figures(step: &Step, v: &Value) -> Option<Vec<Figure>> {
    let device = text(v, "device");
    let rows: Vec<(String, Option<f64>, &'static str, String)> = if let Some(c) = v.get("compile") {
        // The first compile in the process (cold, or from the disk cache when a previous
        // process saved it: the step's name says which), then again (the driver's memory).
        let what = text(c, "what");
        vec![
            (
                format!("{what}: compile"),
                num(c, "first_seconds"),
                "s",
                String::new(),
            ),
            (
                format!("{what}: compile again in the process"),
                num(c, "again_seconds"),
                "s",
                String::new(),
            ),
        ]
    } else if let Some(p) = v.get("private_memory") {
        let size = format!(
            "{} words, {} bytes private, {} program",
            num(p, "words").unwrap_or(0.0),
            num(p, "private_bytes").unwrap_or(0.0),
            text(p, "program")
        );
        let works = p.get("ok").and_then(Value::as_bool).map(f64::from);
        vec![
            (
                "variable-base power batch matches the CPU".into(),
                works,
                "1 = yes",
                size.clone(),
            ),
            (
                "variable-base power batch".into(),
                num(p, "seconds"),
                "s",
                size,
            ),
        ]
    } else if let Some(c) = v.get("pipeline_cache").filter(|c| !c.is_null()) {
        let path = text(c, "path");
        vec![
            (
                "pipeline cache read from disk at start".into(),
                num(c, "loaded_bytes"),
                "bytes",
                path.clone(),
            ),
            (
                "pipeline cache on disk".into(),
                num(c, "saved_bytes"),
                "bytes",
                path,
            ),
        ]
    } else {
        return None;
    };
    Some(
        rows.into_iter()
            .filter_map(|(f, value, unit, size)| figure(step, (f, value, unit), &device, size))
            .collect(),
    )
}

/// A figure of `step`, when its value is a finite number.
fn figure(
    step: &Step,
    (figure, value, unit): (String, Option<f64>, &'static str),
    device: &str,
    size: String,
) -> Option<Figure> {
    value.filter(|x| x.is_finite()).map(|value| Figure {
        step: step.name.clone(),
        figure,
        value,
        unit,
        device: device.to_string(),
        size,
    })
}

/// The figures of a `bench decay` line: the rate, named with its pipeline on a GPU
/// (pipelined, or serial for the A/B pair), and one per traced host stage.
fn decay_figures(step: &Step, v: &Value) -> Vec<Figure> {
    let how = match text(v, "pipeline").as_str() {
        "" | "cpu" => String::new(),
        p => format!(" ({p})"),
    };
    let (model, device) = (text(v, "model"), text(v, "device"));
    let size = format!("{} steps", num(v, "steps").unwrap_or(0.0));
    let rate = (
        format!("{model} sum, transfers included{how}"),
        num(v, "steps_per_second"),
        "steps/s",
    );
    let mut out: Vec<Figure> = figure(step, rate, &device, size.clone())
        .into_iter()
        .collect();
    let stages = v.get("host_stages").and_then(Value::as_array);
    for st in stages.into_iter().flatten() {
        let f = (
            format!("{model} sum{how}, host stage {}", text(st, "stage")),
            num(st, "seconds"),
            "s",
        );
        let calls = format!("{size}, {} calls", num(st, "calls").unwrap_or(0.0));
        out.extend(figure(step, f, &device, calls));
    }
    out
}

/// The figures of a `bench gpu-probe` line: one per adapter feature (1 = has), subgroup
/// size, limit and transfer.
fn probe_figures(step: &Step, adapter: &Value, v: &Value) -> Vec<Figure> {
    let device = text(adapter, "device");
    let driver = text(adapter, "driver");
    let list = |v: &Value, key: &str| -> Vec<Value> {
        v.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut rows: Vec<(String, Option<f64>, &'static str, String)> = Vec::new();
    for f in list(adapter, "features") {
        let has = f.get("has").and_then(Value::as_bool).map(f64::from);
        let name = format!("adapter feature {}", text(&f, "feature"));
        rows.push((name, has, "1 = has", driver.clone()));
    }
    for k in ["subgroup_min_size", "subgroup_max_size"] {
        rows.push((
            format!("adapter {k}"),
            num(adapter, k),
            "lanes",
            driver.clone(),
        ));
    }
    for l in list(adapter, "limits") {
        let name = format!("adapter limit {}", text(&l, "limit"));
        rows.push((name, num(&l, "value"), "", driver.clone()));
    }
    for t in list(v, "transfers") {
        let size = format!("{} bytes", num(&t, "bytes").unwrap_or(0.0));
        rows.push((text(&t, "what"), num(&t, "gb_per_s"), "GB/s", size));
    }

    rows.into_iter()
        .filter_map(|(figure, value, unit, size)| {
            value.filter(|x| x.is_finite()).map(|value| Figure {
                step: step.name.clone(),
                figure,
                value,
                unit,
                device: device.clone(),
                size,
            })
        })
        .collect()
}

/// Read every step's file in `raw` (in the order of `raw/steps.txt`).
fn read_steps(raw: &Path) -> Result<Vec<(Step, Vec<Figure>)>> {
    let order = std::fs::read_to_string(raw.join("steps.txt"))
        .map_err(|e| Error::param("raw", format!("{}: {e}", raw.join("steps.txt").display())))?;
    let mut steps = Vec::new();
    for name in order.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let path = raw.join(format!("{name}.json"));
        let body = std::fs::read_to_string(&path).unwrap_or_default();
        let lines: Vec<Value> = body
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .collect();
        let mut step = Step {
            name: name.to_string(),
            rc: -1,
            ..Step::default()
        };
        if let Some(m) = lines.iter().find_map(|l| l.get("kinsey_step")) {
            step.command = text(m, "command");
            step.rc = m.get("rc").and_then(Value::as_i64).unwrap_or(-1);
            step.seconds = num(m, "seconds").unwrap_or(0.0);
            step.limit = num(m, "limit").unwrap_or(0.0);
        }
        let figures = lines.iter().flat_map(|l| figures_of(&step, l)).collect();
        steps.push((step, figures));
    }
    Ok(steps)
}

/// A figure as people read it: 3 significant digits, thousands apart.
fn show(x: f64) -> String {
    if x.abs() >= 1e6 {
        format!("{x:.3e}")
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.3}")
    }
}

/// The markdown table and the JSON lines of every step in `raw`, written into `out`.
pub fn write(raw: &Path, out: &Path) -> Result<usize> {
    let steps = read_steps(raw)?;
    let machine = std::fs::read_to_string(raw.join("machine.txt")).unwrap_or_default();
    let mut md = String::from("# kinsey figures\n\n");
    for l in machine.lines().filter(|l| !l.trim().is_empty()) {
        let _ = writeln!(md, "- {}", l.trim());
    }
    md.push_str("\n| step | figure | value | unit | device | size |\n|---|---|---:|---|---|---|\n");
    let mut jsonl = String::new();
    let mut notes = String::new();
    let mut count = 0;
    for (step, figures) in &steps {
        if step.rc != 0 {
            let why = match step.rc {
                124 | 137 => format!("ran out of its {:.0} s", step.limit),
                -1 => "did not run".to_string(),
                -2 => "skipped: the run's time budget was spent".to_string(),
                rc => format!("failed (exit {rc})"),
            };
            let _ = writeln!(notes, "- `{}` {why}: `{}`", step.name, step.command);
        }
        for f in figures {
            count += 1;
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                f.step,
                f.figure,
                show(f.value),
                f.unit,
                f.device,
                f.size
            );
            let line = json!({"step": f.step, "figure": f.figure, "value": f.value,
                "unit": f.unit, "device": f.device, "size": f.size, "command": step.command});
            let _ = writeln!(jsonl, "{line}");
        }
    }
    if !notes.is_empty() {
        md.push_str("\nSteps without figures:\n\n");
        md.push_str(&notes);
    }
    let md_path = out.join("figures.md");
    let jsonl_path = out.join("figures.jsonl");
    for (path, body) in [(&md_path, md), (&jsonl_path, jsonl)] {
        std::fs::write(path, body)
            .map_err(|e| Error::param("out", format!("{}: {e}", path.display())))?;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(command: &str) -> Step {
        Step {
            name: "s".into(),
            command: command.into(),
            rc: 0,
            ..Step::default()
        }
    }

    /// A folder that is not a run's raw output is refused, naming the file it lacks, and
    /// nothing is written.
    #[test]
    fn a_folder_without_steps_is_refused() {
        let dir = std::env::temp_dir().join(format!("kinsey-figures-none-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let e = write(&dir, &dir).expect_err("no steps.txt").to_string();
        assert!(e.contains("steps.txt"), "{e}");
        assert!(!dir.join("figures.md").exists());
        std::fs::remove_dir_all(&dir).expect("clean");
    }

    /// Each bench's JSON gives its figures; a line nobody knows gives none; a failed step
    /// is listed without figures.
    #[test]
    fn bench_lines_become_figures() {
        let s = step("kinsey bench paillier --device gpu");
        let paillier = json!({"bits": 2048, "threads": 16, "count": 4096, "encrypt_per_s": 1.5e5,
            "encrypt_key_holder_per_s": 1e5, "decrypt_per_s": 2e4, "add_per_s": 1e7,
            "mul_plain_per_s": 5e4, "rerandomize_per_s": 1e5, "device": "GPU x"});
        let f = figures_of(&s, &paillier);
        assert_eq!(f.len(), 6);
        assert_eq!(f[2].figure, "Paillier-2048 CRT decryption");
        assert_eq!(f[2].value, 2e4);
        assert_eq!(f[2].device, "GPU x");
        let p = step("kinsey bench protocol --parties 20 --crypto-device gpu");
        let v = json!({"parties": 20, "dim": 1000, "wall_seconds": 9.5,
            "stages": [{"stage": "Stage 2", "wall_seconds": 7.0}]});
        let f = figures_of(&p, &v);
        assert_eq!(f.len(), 2);
        assert_eq!(f[1].device, "crypto on GPU");
        assert!(figures_of(&s, &json!({"something": 1})).is_empty());
        // The probe: a figure per feature, subgroup size, limit and transfer.
        let g = json!({"adapter": {"device": "GPU x", "driver": "d 1",
            "features": [{"feature": "SHADER_INT64", "has": true}],
            "subgroup_min_size": 32, "subgroup_max_size": 32,
            "limits": [{"limit": "max_buffer_size", "value": 1024}]},
            "transfers": [{"what": "host to device", "bytes": 64, "seconds": 1.0, "gb_per_s": 25.5}]});
        let f = figures_of(&s, &g);
        assert_eq!(f.len(), 5);
        assert_eq!(
            (f[0].figure.as_str(), f[0].value),
            ("adapter feature SHADER_INT64", 1.0)
        );
        assert_eq!((f[4].unit, f[4].value), ("GB/s", 25.5));
        // A decay run on the GPU names its pipeline and gives one figure per traced stage.
        let d = step("kinsey bench decay --device gpu");
        let v = json!({"model": "window", "steps": 1e6, "steps_per_second": 2e8,
            "device": "GPU x", "pipeline": "serial",
            "host_stages": [{"stage": "patch", "seconds": 0.25, "calls": 3}]});
        let f = figures_of(&d, &v);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].figure, "window sum, transfers included (serial)");
        assert_eq!(f[1].figure, "window sum (serial), host stage patch");
        assert_eq!(
            (f[1].value, f[1].size.as_str()),
            (0.25, "1000000 steps, 3 calls")
        );
        let cpu = json!({"model": "window", "steps": 1e6, "steps_per_second": 2e8,
            "device": "CPU", "pipeline": "cpu", "host_stages": []});
        assert_eq!(
            figures_of(&d, &cpu)[0].figure,
            "window sum, transfers included"
        );
        let c = json!({"bits": 2048, "device": "GPU", "max_batch": 64,
            "ops": [{"op": "encrypt", "crossover": 32}, {"op": "add", "crossover": null}]});
        let f = figures_of(&s, &c);
        assert_eq!(f[0].value, 32.0);
        assert!(f[1].figure.contains("none"));

        let dir = std::env::temp_dir().join(format!("kinsey-figures-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join("steps.txt"), "a\nb\nc\n").expect("steps");
        let skipped = json!({"kinsey_step": {"command": "kinsey bench gpu-private", "rc": -2,
            "seconds": 0.0, "limit": 0}});
        std::fs::write(dir.join("c.json"), format!("{skipped}\n")).expect("c");
        std::fs::write(
            dir.join("a.json"),
            format!(
                "{paillier}\n{}\n",
                json!({"kinsey_step": {"command": "kinsey bench paillier", "rc": 0, "seconds": 3.0, "limit": 60}})
            ),
        )
        .expect("a");
        std::fs::write(
            dir.join("b.json"),
            format!(
                "{}\n",
                json!({"kinsey_step": {"command": "kinsey bench train", "rc": 124, "seconds": 40.0, "limit": 40}})
            ),
        )
        .expect("b");
        std::fs::write(dir.join("machine.txt"), "GPU: test\n").expect("machine");
        assert_eq!(write(&dir, &dir).expect("write"), 6);
        let md = std::fs::read_to_string(dir.join("figures.md")).expect("md");
        assert!(md.contains("- GPU: test"), "{md}");
        assert!(md.contains("`b` ran out of its 40 s"), "{md}");
        assert!(
            md.contains("`c` skipped: the run's time budget was spent"),
            "{md}"
        );
        let jsonl = std::fs::read_to_string(dir.join("figures.jsonl")).expect("jsonl");
        assert_eq!(jsonl.lines().count(), 6);
        std::fs::remove_dir_all(&dir).expect("clean");
    }
}
