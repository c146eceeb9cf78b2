//! Parameters a model does not read are refused, not ignored.

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
