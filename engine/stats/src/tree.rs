//! DP decision trees: ID3 on categorical (or binned) attributes with a private choice of the
//! split attribute (seed 002, slides 29-32; Friedman & Schuster, KDD 2010, "DiffP-ID3").
//!
//! Budget: with depth D the tree has D + 1 levels; `eps' = eps / (2 (D + 1))`. At each node
//! two mechanisms run on the node's rows: a noisy row count (eps'), then either the split
//! choice (eps') or, at a leaf, the noisy class counts (eps'). The nodes of one level hold
//! disjoint rows, so each level costs `2 eps'` by parallel composition and the whole tree
//! `eps`; the accountant records two spends per level reached.
//!
//! A node becomes a leaf when no attribute is left, at depth D, or when
//! `N_T / (t |C|) < sqrt(2) / eps'` (F&S: the class counts would be mostly noise), with `t`
//! the largest attribute domain.
//!
//! Split choice, over the m attributes still available:
//! * `exponential`: the exponential mechanism with eps' on the score (cost eps');
//! * `laplace`: each score plus Laplace noise, argmax; the seed's accounting, each score a
//!   separate query, so each gets eps'/m (cost m * eps'/m = eps');
//! * `none`: the exact argmax (the non-private baseline; no budget).
//!
//! Scores (higher is better; F&S section 4) and their add/remove sensitivities, with `N`
//! a public bound on the rows (n under bounded neighbours):
//! * `info_gain`: `-sum_j sum_c tau_jc log2(tau_jc / tau_j)`, sensitivity `log2(N + 1) + 1/ln 2`;
//! * `gini`: `-sum_j tau_j (1 - sum_c (tau_jc / tau_j)^2)`, sensitivity 2;
//! * `max`: `sum_j max_c tau_jc`, sensitivity 1.
//!
//! Under bounded neighbours (replace one row) each sensitivity, and that of the counts,
//! doubles ([`Neighbours::factor`]). Under unbounded neighbours with a declared row bound
//! `B` the tree reads at most the first `B` rows of its input (n is private: it is never
//! compared with B), so a neighbour differs in at most one replaced row of what is read and
//! the sensitivities double as well.

use kinsey_core::{Error, Result};
use kinsey_data::attributes::CatData;
use kinsey_dp::{Accountant, ExponentialMechanism, LaplaceMechanism, Neighbours, NoiseRng};
use rayon::prelude::*;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
/// How a split is chosen.
pub enum Selection {
    /// The exponential mechanism on the score.
    Exponential,
    /// Noisy scores (Laplace), the best taken.
    Laplace,
    /// No privacy (a baseline; its outputs are NOT PRIVATE).
    None,
}

impl std::str::FromStr for Selection {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "exponential" => Ok(Self::Exponential),
            "laplace" => Ok(Self::Laplace),
            "none" => Ok(Self::None),
            o => Err(Error::param(
                "selection",
                format!("unknown split selection '{o}' (exponential, laplace or none)"),
            )),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
/// The split score.
pub enum Score {
    /// Information gain.
    InfoGain,
    /// Gini index.
    Gini,
    /// Majority count (the max operator).
    Max,
}

impl std::str::FromStr for Score {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "info_gain" | "info-gain" => Ok(Self::InfoGain),
            "gini" => Ok(Self::Gini),
            "max" => Ok(Self::Max),
            o => Err(Error::param(
                "score",
                format!("unknown split score '{o}' (info_gain, gini or max)"),
            )),
        }
    }
}

impl Score {
    /// Add/remove sensitivity for a public row bound `n_bound`.
    pub fn sensitivity(self, n_bound: f64) -> f64 {
        match self {
            Score::InfoGain => (n_bound + 1.0).log2() + 1.0 / std::f64::consts::LN_2,
            Score::Gini => 2.0,
            Score::Max => 1.0,
        }
    }

    /// The score of a split from its `domain x classes` count table.
    pub fn eval(self, table: &[f64], classes: usize) -> f64 {
        table
            .chunks(classes)
            .map(|row| {
                let tj: f64 = row.iter().sum();
                if tj <= 0.0 {
                    return 0.0;
                }
                match self {
                    Score::InfoGain => row
                        .iter()
                        .filter(|&&c| c > 0.0)
                        .map(|&c| c * (c / tj).log2())
                        .sum::<f64>(),
                    Score::Gini => -tj * (1.0 - row.iter().map(|c| (c / tj).powi(2)).sum::<f64>()),
                    Score::Max => row.iter().cloned().fold(0.0, f64::max),
                }
            })
            .sum()
    }
}

#[derive(Debug, Clone, Serialize)]
/// The tree's parameters.
pub struct TreeConfig {
    /// Maximum depth.
    pub depth: usize,
    /// How splits are chosen.
    pub selection: Selection,
    /// The score.
    pub score: Score,
    /// Total epsilon.
    pub epsilon: f64,
    /// The neighbour definition.
    pub neighbours: Neighbours,
    /// Public bound on the rows for the info-gain sensitivity (n under bounded
    /// neighbours; must be given under unbounded ones). Under unbounded neighbours the tree
    /// reads at most this many rows (the first ones), and its sensitivities are doubled.
    pub row_bound: Option<usize>,
}

/// A node of the released tree (also what `kinsey predict` reads back from `tree.json`).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Node {
    /// A leaf.
    Leaf {
        /// Its class code.
        class: usize,
        /// Noisy class counts (exact for the non-private tree).
        counts: Vec<f64>,
    },
    /// An internal node.
    Split {
        /// The attribute it splits on.
        attribute: usize,
        /// Its name.
        name: String,
        /// Noisy row count at the node.
        count: f64,
        /// One child per attribute value.
        children: Vec<Node>,
    },
}

impl Node {
    /// The class the tree predicts for `row`.
    pub fn predict(&self, data: &CatData, row: usize) -> usize {
        match self {
            Node::Leaf { class, .. } => *class,
            Node::Split {
                attribute,
                children,
                ..
            } => children[data.code(row, *attribute)].predict(data, row),
        }
    }

    /// Number of leaves.
    pub fn leaves(&self) -> usize {
        match self {
            Node::Leaf { .. } => 1,
            Node::Split { children, .. } => children.iter().map(Node::leaves).sum(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
/// The tree's release.
pub struct TreeResult {
    /// Its parameters.
    pub config: TreeConfig,
    /// Epsilon of each mechanism.
    pub epsilon_per_mechanism: f64,
    /// Sensitivity of the score.
    pub score_sensitivity: f64,
    /// Sensitivity of the leaf counts.
    pub count_sensitivity: f64,
    /// Number of leaves.
    pub leaves: usize,
    /// The tree.
    pub root: Node,
    /// The budget spent, per level.
    pub accountant: Option<Accountant>,
}

struct Builder<'a> {
    data: &'a CatData,
    cfg: &'a TreeConfig,
    eps1: f64,
    score_sens: f64,
    count_sens: f64,
    rng: &'a mut NoiseRng,
    acct: Option<Accountant>,
    spent_levels: Vec<bool>,
}

impl Builder<'_> {
    fn private(&self) -> bool {
        self.cfg.selection != Selection::None
    }

    fn spend_level(&mut self, level: usize) -> Result<()> {
        if let Some(a) = self.acct.as_mut()
            && !self.spent_levels[level]
        {
            a.spend(
                &format!("level {level}: node counts (parallel over the level's nodes)"),
                self.eps1,
                0.0,
            )?;
            a.spend(
                &format!("level {level}: split choices and leaf class counts"),
                self.eps1,
                0.0,
            )?;
            self.spent_levels[level] = true;
        }
        Ok(())
    }

    fn class_counts(&self, rows: &[u32]) -> Vec<f64> {
        let mut c = vec![0.0; self.data.class_labels.len()];
        for &r in rows {
            c[self.data.classes[r as usize] as usize] += 1.0;
        }
        c
    }

    fn leaf(&mut self, rows: &[u32]) -> Result<Node> {
        let exact = self.class_counts(rows);
        let counts = if self.private() {
            let mech = LaplaceMechanism::new(self.count_sens, self.eps1)?;
            exact
                .iter()
                .map(|&c| mech.release(c, self.rng))
                .collect::<Result<Vec<f64>>>()?
        } else {
            exact
        };
        let class = argmax(&counts);
        Ok(Node::Leaf { class, counts })
    }

    fn table(&self, rows: &[u32], attr: usize) -> Vec<f64> {
        let c = self.data.class_labels.len();
        let mut t = vec![0.0; self.data.domains[attr] * c];
        for &r in rows {
            let r = r as usize;
            t[self.data.code(r, attr) * c + self.data.classes[r] as usize] += 1.0;
        }
        t
    }

    fn build(&mut self, rows: &[u32], avail: &[usize], level: usize) -> Result<Node> {
        self.spend_level(level)?;
        let c = self.data.class_labels.len() as f64;
        let count = if self.private() {
            LaplaceMechanism::new(self.count_sens, self.eps1)?
                .release(rows.len() as f64, self.rng)?
        } else {
            rows.len() as f64
        };
        let t = avail
            .iter()
            .map(|&a| self.data.domains[a])
            .max()
            .unwrap_or(1) as f64;
        let stop = avail.is_empty()
            || level == self.cfg.depth
            || if self.private() {
                count / (t * c) < std::f64::consts::SQRT_2 / self.eps1
            } else {
                rows.is_empty() || self.class_counts(rows).iter().filter(|&&v| v > 0.0).count() <= 1
            };
        if stop {
            return self.leaf(rows);
        }
        let scores: Vec<f64> = avail
            .par_iter()
            .map(|&a| self.cfg.score.eval(&self.table(rows, a), c as usize))
            .collect();
        let pick = match self.cfg.selection {
            Selection::None => argmax(&scores),
            Selection::Exponential => ExponentialMechanism::new(self.score_sens, self.eps1, false)?
                .select(&scores, self.rng)?,
            Selection::Laplace => {
                let mech = LaplaceMechanism::new(self.score_sens, self.eps1 / avail.len() as f64)?;
                let noisy = scores
                    .iter()
                    .map(|&s| mech.release(s, self.rng))
                    .collect::<Result<Vec<f64>>>()?;
                argmax(&noisy)
            }
        };
        let attr = avail[pick];
        let rest: Vec<usize> = avail.iter().copied().filter(|&a| a != attr).collect();
        let mut parts: Vec<Vec<u32>> = vec![Vec::new(); self.data.domains[attr]];
        for &r in rows {
            parts[self.data.code(r as usize, attr)].push(r);
        }
        let mut children = Vec::with_capacity(parts.len());
        for p in &parts {
            children.push(self.build(p, &rest, level + 1)?);
        }
        Ok(Node::Split {
            attribute: attr,
            name: self.data.names[attr].clone(),
            count,
            children,
        })
    }
}

fn argmax(v: &[f64]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best
}

/// The parameters alone (depth, the bound info_gain needs under unbounded neighbours,
/// epsilon): public, checked before a front door charges the budget ledger.
pub fn check_config(cfg: &TreeConfig) -> Result<()> {
    if cfg.depth > 64 {
        return Err(Error::param(
            "depth",
            format!("at most 64, got {}", cfg.depth),
        ));
    }
    let private = cfg.selection != Selection::None;
    if private {
        kinsey_core::check_epsilon("epsilon budget", cfg.epsilon)?;
    }
    if cfg.neighbours == Neighbours::Unbounded
        && cfg.row_bound.is_none()
        && cfg.score == Score::InfoGain
        && private
    {
        return Err(info_gain_needs_a_bound());
    }
    Ok(())
}

/// The refusal of info_gain without a row bound under unbounded neighbours (a public fact).
fn info_gain_needs_a_bound() -> Error {
    Error::param(
        "row_bound",
        "info_gain's sensitivity needs a public bound on the rows; under unbounded neighbours \
         n is private, so declare one (or use the max or gini score)",
    )
}

/// Train a tree.
pub fn train(data: &CatData, cfg: &TreeConfig, rng: &mut NoiseRng) -> Result<TreeResult> {
    data.check()?;
    // Refused only where n is public (bounded neighbours): under unbounded ones an empty
    // table and a one-row table are neighbours.
    if data.n == 0 && cfg.neighbours.n_is_public() {
        return Err(Error::param("tree data", "zero rows"));
    }
    check_config(cfg)?;
    let private = cfg.selection != Selection::None;
    // A refusal may depend on public values only. Under bounded neighbours n is public, so a
    // bound below it is refused; under unbounded neighbours n is private (refusing exactly
    // when the bound is below n made the exit code an oracle for n: bisection recovered it),
    // so the tree reads at most the first `b` rows, whatever n is. A neighbour (one row added
    // or removed anywhere) then changes the rows read by at most one row added and one
    // removed: every sensitivity is the replace-one sensitivity at size `b`.
    let (n_bound, factor, rows_read) = match (cfg.neighbours, cfg.row_bound) {
        (Neighbours::Bounded, Some(b)) if b < data.n => {
            return Err(Error::param(
                "row_bound",
                format!(
                    "the declared bound {b} is below the number of rows in the input (public \
                     under bounded neighbours)"
                ),
            ));
        }
        (Neighbours::Bounded, b) => (b.unwrap_or(data.n), Neighbours::Bounded.factor(), data.n),
        (Neighbours::Unbounded, Some(b)) => (b, Neighbours::Bounded.factor(), data.n.min(b)),
        (Neighbours::Unbounded, None) if cfg.score == Score::InfoGain && private => {
            return Err(info_gain_needs_a_bound());
        }
        // gini and max: sensitivities that do not depend on n.
        (Neighbours::Unbounded, None) => (data.n, Neighbours::Unbounded.factor(), data.n),
    };
    let n_bound = n_bound as f64;
    let levels = cfg.depth + 1;
    let acct = if private {
        Some(Accountant::new(cfg.epsilon, 0.0)?)
    } else {
        None
    };
    let eps1 = cfg.epsilon / (2.0 * levels as f64);
    let mut b = Builder {
        data,
        cfg,
        eps1,
        score_sens: factor * cfg.score.sensitivity(n_bound),
        count_sens: factor,
        rng,
        acct,
        spent_levels: vec![false; levels],
    };
    let rows: Vec<u32> = (0..rows_read as u32).collect();
    let avail: Vec<usize> = (0..data.m).collect();
    let root = b.build(&rows, &avail, 0)?;
    Ok(TreeResult {
        config: cfg.clone(),
        epsilon_per_mechanism: eps1,
        score_sensitivity: b.score_sens,
        count_sensitivity: b.count_sens,
        leaves: root.leaves(),
        root,
        accountant: b.acct,
    })
}

/// Share of rows whose class the tree predicts.
pub fn accuracy(root: &Node, data: &CatData) -> f64 {
    let ok = (0..data.n)
        .into_par_iter()
        .filter(|&r| root.predict(data, r) == data.classes[r] as usize)
        .count();
    ok as f64 / data.n as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Class = a0 XOR-free rule: class 1 iff a0 == 1 and a2 == 1 (90% of the time); a1, a3
    /// are noise.
    fn data(n: usize, seed: u64) -> CatData {
        let mut r = NoiseRng::from_seed_quiet(seed);
        let m = 4;
        let mut codes = Vec::new();
        let mut classes = Vec::new();
        for _ in 0..n {
            let row: Vec<u16> = (0..m).map(|_| r.bit() as u16).collect();
            let rule = row[0] == 1 && row[2] == 1;
            let c = if r.uniform_open0() < 0.9 { rule } else { !rule };
            codes.extend(&row);
            classes.push(c as u16);
        }
        CatData {
            codes,
            n,
            m,
            domains: vec![2; m],
            names: (0..m).map(|i| format!("a{i}")).collect(),
            classes,
            class_labels: vec!["0".into(), "1".into()],
        }
    }

    fn cfg(selection: Selection, eps: f64) -> TreeConfig {
        TreeConfig {
            depth: 3,
            selection,
            score: Score::InfoGain,
            epsilon: eps,
            neighbours: Neighbours::Bounded,
            row_bound: None,
        }
    }

    #[test]
    fn private_trees_learn_the_rule_and_spend_exactly_the_budget() {
        let train_d = data(40_000, 1);
        let test_d = data(10_000, 2);
        let mut rng = NoiseRng::from_seed_quiet(3);
        let exact = train(&train_d, &cfg(Selection::None, 1.0), &mut rng).expect("trains");
        let acc0 = accuracy(&exact.root, &test_d);
        assert!(acc0 > 0.88, "non-private {acc0}");
        for sel in [Selection::Exponential, Selection::Laplace] {
            let r = train(&train_d, &cfg(sel, 2.0), &mut rng).expect("trains");
            let acc = accuracy(&r.root, &test_d);
            assert!(acc > 0.85, "{sel:?}: {acc}");
            let a = r.accountant.expect("private");
            assert!(a.spent().0 <= 2.0 + 1e-9, "{:?}", a.ledger);
            assert!(a.ledger.len() >= 2 && a.ledger.len().is_multiple_of(2));
        }
    }

    #[test]
    fn scores_prefer_the_informative_split_and_reject_bad_configs() {
        // perfectly informative vs useless split on 2 classes
        let good = [10.0, 0.0, 0.0, 10.0];
        let bad = [5.0, 5.0, 5.0, 5.0];
        for s in [Score::InfoGain, Score::Gini, Score::Max] {
            assert!(s.eval(&good, 2) > s.eval(&bad, 2), "{s:?}");
        }
        assert!((Score::InfoGain.eval(&bad, 2) + 20.0).abs() < 1e-12);
        let d = data(100, 1);
        let mut c = cfg(Selection::Exponential, 1.0);
        c.neighbours = Neighbours::Unbounded;
        let mut rng = NoiseRng::from_seed_quiet(1);
        assert!(
            train(&d, &c, &mut rng).is_err(),
            "info gain needs a row bound"
        );
        c.row_bound = Some(1000);
        let wide = train(&d, &c, &mut rng).expect("bound above n");
        c.row_bound = Some(50);
        let cut = train(&d, &c, &mut rng).expect("a bound below n is not refused");
        // Item 7 of the second audit: the outcome may not depend on whether n > bound, and
        // the sensitivities are the replace-one ones whatever n is.
        assert_eq!(cut.count_sensitivity, 2.0);
        assert_eq!(wide.count_sensitivity, 2.0);
        assert_eq!(
            cut.score_sensitivity,
            2.0 * Score::InfoGain.sensitivity(50.0)
        );
        let mut exact = cfg(Selection::None, 1.0);
        exact.neighbours = Neighbours::Unbounded;
        exact.depth = 0;
        exact.row_bound = Some(50);
        let Node::Leaf { counts, .. } = train(&d, &exact, &mut rng).expect("ok").root else {
            panic!("depth 0 is a leaf");
        };
        assert_eq!(
            counts.iter().sum::<f64>(),
            50.0,
            "the first 50 rows are read"
        );
        let mut b = cfg(Selection::Exponential, 1.0);
        b.row_bound = Some(50);
        assert!(
            train(&d, &b, &mut rng).is_err(),
            "bounded: n is public, a bound below it is refused"
        );
        assert!("entropy".parse::<Score>().is_err());
    }

    /// The info-gain sensitivity bound holds on random neighbouring tables (add one row).
    #[test]
    fn info_gain_sensitivity_bound_holds() {
        let mut r = NoiseRng::from_seed_quiet(5);
        let bound = Score::InfoGain.sensitivity(200.0);
        for _ in 0..2000 {
            let t: Vec<f64> = (0..6).map(|_| r.below(30) as f64).collect();
            let mut t2 = t.clone();
            t2[r.below(6) as usize] += 1.0;
            let diff = (Score::InfoGain.eval(&t, 3) - Score::InfoGain.eval(&t2, 3)).abs();
            assert!(diff <= bound, "{diff} > {bound}");
        }
    }
}
