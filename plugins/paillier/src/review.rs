//! The constant-time review as a test: every operation in this crate's code (tests aside)
//! that GMP may run in time depending on its operands (`%`, `/`, `invert`, `pow_mod`) is
//! listed here with why it may: its operands are public, or it runs once per key (a stated
//! exception). A new one fails the test until it is reviewed; one by a secret modulus or
//! with a secret exponent must use `sec_mod` or `secure_pow_mod` instead. (Audit 2, item 6:
//! `FixedBase::pow` reduced by the secret `p^2`, `q^2` with `%` in the key holder's CRT
//! encryption, and `g_pow` did `(1 + m n) % p^2`, while the docs said every such reduction
//! was constant time. The key holder now encrypts with the public key's tables, so no
//! `FixedBase` is built on a secret modulus.) `docs/privacy.md` has the list of operations on
//! secrets and their routines.

/// The crate's sources, as compiled.
const SOURCES: [(&str, &str); 6] = [
    ("arith.rs", include_str!("arith.rs")),
    ("dgk.rs", include_str!("dgk.rs")),
    ("fixed_base.rs", include_str!("fixed_base.rs")),
    ("keys.rs", include_str!("keys.rs")),
    ("lib.rs", include_str!("lib.rs")),
    ("phe.rs", include_str!("phe.rs")),
];

/// Reviewed variable-time operations: (file, the line's text, why it is allowed).
const REVIEWED: &[(&str, &str, &str)] = &[
    (
        "arith.rs",
        "Integer::from_digits(&buf, Order::Lsf) % n",
        "public n (random below n)",
    ),
    (
        "dgk.rs",
        "let cofactor = (p - 1u32).complete() / &order;",
        "once per DGK key",
    ),
    (
        "dgk.rs",
        "let qinv = q.clone().invert(p).unwrap_or_default();",
        "once per DGK key",
    ),
    (
        "dgk.rs",
        "let ghr = (&hr * &pk.g).complete() % &pk.n;",
        "public DGK n",
    ),
    (
        "dgk.rs",
        ".invert(&k.n)",
        "public DGK n, public ciphertexts",
    ),
    (
        "dgk.rs",
        "let flipped = (&k.g * &ey_inv[i]).complete() % &k.n;",
        "public DGK n",
    ),
    (
        "dgk.rs",
        "suffix[i] = (&suffix[i + 1] * &xor[i]).complete() % &k.n;",
        "public DGK n",
    ),
    (
        "dgk.rs",
        "let sq = (&suffix[i + 1] * &suffix[i + 1]).complete() % &k.n;",
        "public DGK n",
    ),
    (
        "dgk.rs",
        "let cube = sq * &suffix[i + 1] % &k.n;",
        "public DGK n",
    ),
    (
        "dgk.rs",
        "(gx * &ey_inv[i] % &k.n) * cube % &k.n",
        "public DGK n",
    ),
    (
        "dgk.rs",
        "terms.push(k.g_pow_secret(1 - i64::from(delta_a)) * &suffix[0] % &k.n);",
        "public DGK n",
    ),
    (
        "dgk.rs",
        "let blinded = c.secure_pow_mod(r, &k.n) * k.h_table.pow(e) % &k.n;",
        "public DGK n",
    ),
    (
        "dgk.rs",
        "let j = (rng.next_u64() % (i as u64 + 1)) as usize;",
        "a machine word (shuffle)",
    ),
    (
        "fixed_base.rs",
        "let mut b = Integer::from(base % modulus);",
        "FixedBase: public moduli only (n^2, DGK's n)",
    ),
    (
        "fixed_base.rs",
        "acc = Integer::from(&acc * &b) % modulus;",
        "FixedBase: public moduli only",
    ),
    (
        "fixed_base.rs",
        "offset = Integer::from(&offset * &b) % modulus;",
        "FixedBase: public moduli only",
    ),
    (
        "fixed_base.rs",
        "let correction = offset.invert(modulus).ok()?;",
        "FixedBase: public moduli only",
    ),
    (
        "fixed_base.rs",
        "let digit = (byte >> (4 * (i % 2) as u32)) & 0x0f;",
        "public window index",
    ),
    (
        "fixed_base.rs",
        "acc %= &self.modulus;",
        "FixedBase: public moduli only (the key holder encrypts with n^2's table)",
    ),
    (
        "keys.rs",
        "let h = n - (&y * &y).complete() % n;",
        "public n",
    ),
    ("keys.rs", "d.clone().invert(&m).ok()", "once per key"),
    ("keys.rs", ".invert(&p)", "once per key load"),
    ("keys.rs", ".invert(&q)", "once per key load"),
    (
        "keys.rs",
        "let q_inv_p = q.clone().invert(&p).map_err(|_| bad())?;",
        "once per key load",
    ),
    ("lib.rs", ".map(|v| (v % &self.n).complete())", "public n"),
    (
        "lib.rs",
        ".reduce(|| Integer::from(1), |a, b| a * b % &self.n);",
        "public n",
    ),
    (
        "lib.rs",
        "(self.residue(m) * &self.n + 1u32) % n2",
        "g_pow: public n^2 only",
    ),
    (
        "lib.rs",
        ".map(|(&v, e)| k.to_ct(&((k.g_pow(v, &k.n2) * ctx.table.pow(e)) % &k.n2)))",
        "public n^2",
    ),
    (
        "lib.rs",
        ".map(|(x, y)| k.to_ct(&((x * y).complete() % &k.n2)))",
        "public n^2",
    ),
    (
        "lib.rs",
        ".map(|(x, &v)| k.to_ct(&((k.g_pow(v, &k.n2) * x) % &k.n2)))",
        "public n^2",
    ),
    (
        "lib.rs",
        ".map(|x| x.clone().invert(&k.n2).map_err(not_invertible))",
        "public ciphertexts, public n^2",
    ),
    (
        "lib.rs",
        "let inv = x.clone().invert(&k.n2).map_err(not_invertible)?;",
        "public ciphertext, public n^2",
    ),
    (
        "lib.rs",
        "let corr = inv.pow_mod(&offset, &k.n2).map_err(not_invertible)?;",
        "public exponent 2^127",
    ),
    ("lib.rs", "Ok(k.to_ct(&(xe * corr % &k.n2)))", "public n^2"),
    (
        "lib.rs",
        ".invert(&key.n2)",
        "public ciphertext, public n^2",
    ),
    (
        "lib.rs",
        ".pow_mod(&offset, &key.n2)",
        "public exponent 2^127",
    ),
    (
        "lib.rs",
        "key.to_ct(&(table.pow(&e) * &corr % &key.n2))",
        "public n^2",
    ),
    (
        "lib.rs",
        ".map(|(x, e)| k.to_ct(&((ctx.table.pow(e) * x) % &k.n2)))",
        "public n^2",
    ),
    ("phe.rs", "if s.len() % 4 == 1 {", "base64 length"),
    ("phe.rs", ".invert(&n)", "once per imported key"),
    (
        "phe.rs",
        "let mut x = match a.pow_mod_ref(&t, n) {",
        "once per imported key (factoring n)",
    ),
    (
        "phe.rs",
        "let y = (&x * &x).complete() % n;",
        "once per imported key (factoring n)",
    ),
    (
        "phe.rs",
        "let q = (n / &p).complete();",
        "once per imported key",
    ),
    (
        "phe.rs",
        "let p = (&s - &r).complete() / 2u32;",
        "once per imported key (p from p + q and p - q)",
    ),
    (
        "phe.rs",
        "let q = (&s + &r).complete() / 2u32;",
        "once per imported key (q from p + q and p - q)",
    ),
];

/// A line GMP (or the CPU) may run in operand-dependent time.
fn variable_time(line: &str) -> bool {
    let l = line.trim();
    if l.starts_with("//") {
        return false;
    }
    let pow_mod = l.contains("pow_mod") && !l.contains("secure_pow_mod");
    l.contains(" % ")
        || l.contains("%=")
        || l.contains(".invert(")
        || pow_mod
        || l.contains(" / &")
        || l.contains(".complete() / ")
}

#[test]
fn every_variable_time_operation_is_reviewed() {
    let mut unreviewed = Vec::new();
    let mut seen = vec![false; REVIEWED.len()];
    for (file, text) in SOURCES {
        let code = text
            .split("\n#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or(text);
        for line in code.lines().filter(|l| variable_time(l)) {
            match REVIEWED
                .iter()
                .position(|(f, l, _)| *f == file && *l == line.trim())
            {
                Some(i) => seen[i] = true,
                None => unreviewed.push(format!("{file}: {}", line.trim())),
            }
        }
    }
    assert!(
        unreviewed.is_empty(),
        "variable-time operations nobody reviewed (public operands or once per key? then list \
         them; a secret modulus or exponent? then use sec_mod / secure_pow_mod):\n{}",
        unreviewed.join("\n")
    );
    let stale: Vec<&str> = REVIEWED
        .iter()
        .zip(&seen)
        .filter(|(_, s)| !**s)
        .map(|((_, l, _), _)| *l)
        .collect();
    assert!(
        stale.is_empty(),
        "reviewed lines that no longer exist: {stale:?}"
    );
}

/// The review has teeth: the two reductions the audit found would not pass it.
#[test]
fn the_review_catches_a_reduction_by_a_secret_modulus() {
    for line in [
        "acc %= &s.p2;",
        "(self.residue(m) * &self.n + 1u32) % modulus",
    ] {
        assert!(variable_time(line));
        assert!(!REVIEWED.iter().any(|(_, l, _)| *l == line), "{line}");
    }
    assert!(!variable_time("let t = sec_mod(&x, &s.p2);"));
    assert!(!variable_time("c.secure_pow_mod_ref(&s.pm1, &s.p2)"));
}
