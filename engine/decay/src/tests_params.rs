//! Parameters a model does not read are refused, not ignored; `best` picks the least
//! stated error.

use super::*;

#[test]
fn a_parameter_the_model_does_not_read_is_refused_by_name() {
    let p = |f: &dyn Fn(&mut ModelParams)| {
        let mut p = ModelParams::default();
        f(&mut p);
        p
    };
    let refused =
        |model: &str, params: ModelParams, name: &str| match check_params_apply(model, &params) {
            Err(Error::Param { name: n, msg }) => {
                assert_eq!(n, name, "{msg}");
                assert!(msg.contains(model), "{msg}");
            }
            other => panic!("{model}: expected {name} refused, got {other:?}"),
        };
    refused(
        "window",
        p(&|p| {
            p.window = Some(24);
            p.alpha = Some(0.5)
        }),
        "alpha",
    );
    refused("running", p(&|p| p.window = Some(24)), "window");
    refused(
        "exponential",
        p(&|p| {
            p.alpha = Some(0.9);
            p.c = Some(1.5)
        }),
        "c",
    );
    refused(
        "window",
        p(&|p| {
            p.window = Some(24);
            p.windows = Some(vec![2])
        }),
        "windows",
    );
    refused(
        "window",
        p(&|p| {
            p.window = Some(24);
            p.horizon = Some(9)
        }),
        "horizon",
    );
    // What each model reads is accepted, the horizon where it is read.
    for (model, params) in [
        ("window", p(&|p| p.window = Some(24))),
        ("rr", p(&|p| p.window = Some(24))),
        ("allwindow", p(&|p| p.windows = Some(vec![2, 4]))),
        ("exponential", p(&|p| p.alpha = Some(0.9))),
        (
            "polynomial",
            p(&|p| {
                p.c = Some(1.5);
                p.horizon = Some(9)
            }),
        ),
        ("running", p(&|p| p.horizon = Some(9))),
        (
            "window",
            p(&|p| {
                p.window = Some(24);
                p.rho = Some(0.5);
                p.horizon = Some(9)
            }),
        ),
        (
            "window",
            p(&|p| {
                p.window = Some(24);
                p.mechanism = Some("best".into());
                p.horizon = Some(9)
            }),
        ),
        // An unknown model is build's to name.
        ("sideways", p(&|p| p.alpha = Some(0.5))),
    ] {
        check_params_apply(model, &params).unwrap_or_else(|e| panic!("{model}: {e}"));
    }
}

/// `best` takes the least stated mean variance among every mechanism of the model, from
/// public parameters only: on flights-3m's horizon the smooth tree for a pure running sum,
/// a forest for alpha = 0.999, the k-ary tree for a window, and under zCDP the window's own
/// square root; its figure is at most every candidate's.
#[test]
fn best_picks_the_least_stated_error_of_every_mechanism() {
    let n = 3_000_000u64;
    let public = |zcdp: bool| Public {
        epsilon: 1.0,
        bound: 1.0,
        key: [4; 32],
        zcdp: zcdp.then(|| zcdp::Zcdp::new(0.5, None).expect("zcdp")),
    };
    let params = |f: &dyn Fn(&mut ModelParams)| {
        let mut p = ModelParams {
            horizon: Some(n),
            ..ModelParams::default()
        };
        f(&mut p);
        p
    };
    let cases: [(&str, ModelParams, bool, &str, &[&str]); 4] = [
        (
            "running",
            params(&|_| {}),
            false,
            "smooth",
            &["tree", "kary", "smooth"],
        ),
        (
            "exponential",
            params(&|p| {
                p.alpha = Some(0.999);
                p.horizon = None;
            }),
            false,
            "forest",
            &["tree", "kary"],
        ),
        (
            "window",
            params(&|p| p.window = Some(1440)),
            false,
            "optimal",
            &["tree", "kary"],
        ),
        (
            "window",
            params(&|p| p.window = Some(1440)),
            true,
            "the window's square-root",
            &["tree", "kary", "blt", "sqrt"],
        ),
    ];
    for (model, p, zcdp, want, others) in cases {
        let pick = |m: &str| {
            let mut q = p.clone();
            q.mechanism = Some(m.to_string());
            let b = build(model, &q, &public(zcdp)).expect("build");
            (
                crate::kary::mean_variance(b.as_ref(), n),
                b.calibration().model,
            )
        };
        let (v, label) = pick("best");
        assert!(label.contains(want), "{model}: {label}");
        for m in others {
            let (w, other) = pick(m);
            assert!(
                v <= w * (1.0 + 1e-9),
                "{model}: best {label} {v} > {m} {other} {w}"
            );
        }
    }
}
