//! `kinsey experiment mechanisms`: the stated mean RMSE (the public figure `--mechanism
//! best` compares) of the tree and of the best mechanism, pure DP at eps and zCDP at the
//! rho = eps^2 / 2 it implies (the Gaussian tree and the best zCDP mechanism), over window
//! lengths and decays. Public parameters only: no data.

use kinsey_core::Result;
use kinsey_decay::{self as decay, ModelParams, Public, kary};

/// The four curves of each panel: the tree, the best pure mechanism, the Gaussian tree and
/// the best zCDP mechanism; each point (x, stated RMSE).
#[derive(Debug, Clone)]
pub struct Mechanisms {
    /// Every point as CSV (with the mechanisms `best` chose).
    pub csv: String,
    /// Window sums against W.
    pub window: Vec<Vec<(f64, f64)>>,
    /// Exponential sums against 1 / (1 - alpha).
    pub exponential: Vec<Vec<(f64, f64)>>,
}

/// The stated errors over `steps` steps at `epsilon` and per-step bound `bound`.
pub fn mechanisms(steps: u64, epsilon: f64, bound: f64) -> Result<Mechanisms> {
    kinsey_core::check_epsilon("epsilon", epsilon)?;
    let public = Public {
        epsilon,
        bound,
        key: [0; 32],
        zcdp: None,
    };
    // The zCDP family at the rho pure eps-DP implies (eps^2 / 2), the same scale of noise.
    let gauss = Public {
        zcdp: Some(decay::zcdp::Zcdp::new(epsilon * epsilon / 2.0, None)?),
        ..public.clone()
    };
    let rmse = |model: &str, params: &ModelParams, mech: &str, zcdp: bool| {
        let mut p = params.clone();
        p.horizon = Some(steps);
        p.mechanism = Some(mech.into());
        let m = decay::build(model, &p, if zcdp { &gauss } else { &public })?;
        let name = m.calibration().model;
        Ok::<_, kinsey_core::Error>((kary::mean_variance(m.as_ref(), steps).sqrt(), name))
    };
    // Per point: the tree, the best pure mechanism, the Gaussian tree, the best zCDP one.
    let four = |model: &str, p: &ModelParams, label: String, csv: &mut String| {
        let (t, _) = rmse(model, p, "tree", false)?;
        let (b, name) = rmse(model, p, "best", false)?;
        let (gt, _) = rmse(model, p, "tree", true)?;
        let (gb, gname) = rmse(model, p, "best", true)?;
        csv.push_str(&format!(
            "{model},{label},{t},{b},\"{name}\",{gt},{gb},\"{gname}\"\n"
        ));
        Ok::<_, kinsey_core::Error>([t, b, gt, gb])
    };
    let mut csv = String::from(
        "sum,parameter,tree_rmse,best_rmse,best_mechanism,gaussian_tree_rmse,\
         zcdp_best_rmse,zcdp_best_mechanism\n",
    );
    let (mut win, mut exp) = (vec![Vec::new(); 4], vec![Vec::new(); 4]);
    for e in 3..=16 {
        let w = 1u64 << e;
        let p = ModelParams {
            window: Some(w),
            ..ModelParams::default()
        };
        for (s, v) in win
            .iter_mut()
            .zip(four("window", &p, w.to_string(), &mut csv)?)
        {
            s.push((w as f64, v));
        }
    }
    for alpha in [0.5, 0.8, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999] {
        let p = ModelParams {
            alpha: Some(alpha),
            ..ModelParams::default()
        };
        let horizon = 1.0 / (1.0 - alpha);
        for (s, v) in exp
            .iter_mut()
            .zip(four("exponential", &p, alpha.to_string(), &mut csv)?)
        {
            s.push((horizon, v));
        }
    }
    Ok(Mechanisms {
        csv,
        window: win,
        exponential: exp,
    })
}
