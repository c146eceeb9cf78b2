//! One source for a stated formula: an expression that the calibration evaluates and the
//! release prints, so the sensitivity a report states is the one the noise was drawn for.
//! (An audit found `report.json` stating `sqrt(d) 2^-32 (1 + 1/K) / K` for a rounding term
//! the calibration computed as `sqrt(d) 2^-32 / K`, from two hand-written copies.)

/// An arithmetic expression over public constants and one secret variable.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A number, printed as itself.
    Lit(f64),
    /// A public constant, printed by name; its value is listed by [`Expr::bindings`].
    Named(&'static str, f64),
    /// The secret variable (the smallest party's size), printed by name, never valued.
    Secret(&'static str),
    /// A sum.
    Add(Box<Expr>, Box<Expr>),
    /// A product (printed as juxtaposition).
    Mul(Box<Expr>, Box<Expr>),
    /// A quotient.
    Div(Box<Expr>, Box<Expr>),
    /// A square root.
    Sqrt(Box<Expr>),
    /// `2^k`.
    Pow2(i32),
}

impl std::ops::Add for Expr {
    type Output = Expr;
    fn add(self, o: Expr) -> Expr {
        Expr::Add(Box::new(self), Box::new(o))
    }
}

impl std::ops::Mul for Expr {
    type Output = Expr;
    fn mul(self, o: Expr) -> Expr {
        Expr::Mul(Box::new(self), Box::new(o))
    }
}

impl std::ops::Div for Expr {
    type Output = Expr;
    fn div(self, o: Expr) -> Expr {
        Expr::Div(Box::new(self), Box::new(o))
    }
}

impl Expr {
    /// `sqrt(self)`.
    pub fn sqrt(self) -> Expr {
        Expr::Sqrt(Box::new(self))
    }

    /// The value, with `secret` for the secret variable.
    pub fn eval(&self, secret: f64) -> f64 {
        match self {
            Expr::Lit(v) | Expr::Named(_, v) => *v,
            Expr::Secret(_) => secret,
            Expr::Add(a, b) => a.eval(secret) + b.eval(secret),
            Expr::Mul(a, b) => a.eval(secret) * b.eval(secret),
            Expr::Div(a, b) => a.eval(secret) / b.eval(secret),
            Expr::Sqrt(a) => a.eval(secret).sqrt(),
            Expr::Pow2(k) => f64::from(*k).exp2(),
        }
    }

    /// Binding strength: sums 1, products and quotients 2, the rest 3.
    fn level(&self) -> u8 {
        match self {
            Expr::Add(..) => 1,
            Expr::Mul(..) | Expr::Div(..) => 2,
            _ => 3,
        }
    }

    fn wrap(&self, min: u8) -> String {
        if self.level() < min {
            format!("({self})")
        } else {
            self.to_string()
        }
    }

    /// The named constants and their values, each once, in order of appearance.
    pub fn bindings(&self) -> Vec<(&'static str, f64)> {
        let mut out: Vec<(&'static str, f64)> = Vec::new();
        self.collect(&mut out);
        out
    }

    fn collect(&self, out: &mut Vec<(&'static str, f64)>) {
        match self {
            Expr::Named(n, v) if !out.iter().any(|(m, _)| m == n) => out.push((n, *v)),
            Expr::Add(a, b) | Expr::Mul(a, b) | Expr::Div(a, b) => {
                a.collect(out);
                b.collect(out);
            }
            Expr::Sqrt(a) => a.collect(out),
            _ => {}
        }
    }
}

impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expr::Lit(v) => write!(f, "{v}"),
            Expr::Named(n, _) | Expr::Secret(n) => write!(f, "{n}"),
            Expr::Add(a, b) => write!(f, "{} + {}", a.wrap(1), b.wrap(1)),
            Expr::Mul(a, b) => write!(f, "{} {}", a.wrap(2), b.wrap(3)),
            Expr::Div(a, b) => write!(f, "{} / {}", a.wrap(2), b.wrap(3)),
            Expr::Sqrt(a) => write!(f, "sqrt({a})"),
            Expr::Pow2(k) => write!(f, "2^{k}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_as_written_and_evaluates_the_same_tree() {
        let lam = Expr::Named("Lambda", 0.5);
        let k = Expr::Named("K", 4.0);
        let e = (Expr::Lit(2.0) / (Expr::Secret("n_(1)") * lam.clone())
            + Expr::Lit(2.0) * Expr::Named("g", 1e-10) / lam)
            / k.clone()
            + Expr::Named("d", 9.0).sqrt() * Expr::Pow2(-32) / k;
        assert_eq!(
            e.to_string(),
            "(2 / (n_(1) Lambda) + 2 g / Lambda) / K + sqrt(d) 2^-32 / K"
        );
        let want = (2.0 / (100.0 * 0.5) + 2.0 * 1e-10 / 0.5) / 4.0 + 3.0 * 2f64.powi(-32) / 4.0;
        assert!((e.eval(100.0) - want).abs() < 1e-18);
        let names: Vec<&str> = e.bindings().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["Lambda", "g", "K", "d"]);
    }
}
