#!/usr/bin/env bash
# kinsey's Paillier against python-paillier (phe 1.5 with gmpy2), same machine, same run.
#
#   benches/paillier_vs_phe.sh [COUNT]     (default 200 values per operation)
#
# Measures encrypt, decrypt, add and multiply-by-a-32-bit-plaintext per second at 2048 and
# 3072 bits: kinsey on one thread and on all cores (`kinsey bench paillier --json`),
# python-paillier on one core (it has no parallel path), and prints the ratios. Then checks
# interoperability both ways through the file formats (`kinsey keys` <-> phe).
# python-paillier and gmpy2 are installed in .venv-phe.
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${1:-200}
cargo build --release -q -p kinsey-cli
if [ ! -x .venv-phe/bin/python ]; then
  python3 -m venv .venv-phe
  .venv-phe/bin/pip install -q "phe==1.5.0" "gmpy2>=2.1"
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
K=./target/release/kinsey
$K bench paillier --bits 2048,3072 --threads 1,0 --count "$COUNT" --json > "$tmp/kinsey.jsonl"

# Interop: kinsey key + ciphertext -> phe, phe ciphertext -> kinsey.
$K keys generate --out "$tmp/keys" --bits 2048 >/dev/null
$K keys encrypt --public "$tmp/keys/public.json" -- -1234.5 > "$tmp/from_kinsey.json"

.venv-phe/bin/python - "$tmp" "$COUNT" <<'PY'
import json, sys, time, random, os, subprocess
import phe, gmpy2
from phe import util
tmp, count = sys.argv[1], int(sys.argv[2])
assert phe.util.HAVE_GMP, "gmpy2 not in use"

def rate(f, n):
    t = time.perf_counter(); f(); return n / (time.perf_counter() - t)

phe_rates = {}
for bits in (2048, 3072):
    pub, priv = phe.generate_paillier_keypair(n_length=bits)
    m = [(i - 100) * 1_000_003 for i in range(count)]
    k = [random.getrandbits(32) for _ in range(count)]
    enc = []
    r = {"encrypt_per_s": rate(lambda: enc.extend(pub.encrypt(v) for v in m), count)}
    dec = []
    r["decrypt_per_s"] = rate(lambda: dec.extend(priv.decrypt(c) for c in enc), count)
    assert dec == m
    reps = 20
    r["add_per_s"] = rate(lambda: [enc[i] + enc[(i + 1) % count] for _ in range(reps) for i in range(count)], reps * count)
    r["mul_plain_per_s"] = rate(lambda: [enc[i] * k[i] for i in range(count)], count)
    phe_rates[bits] = r

kin = [json.loads(l) for l in open(os.path.join(tmp, "kinsey.jsonl"))]
ops = ["encrypt_per_s", "decrypt_per_s", "add_per_s", "mul_plain_per_s"]
print(f"python-paillier {phe.__version__ if hasattr(phe, '__version__') else '1.5.0'} + gmpy2 {gmpy2.version()}, {count} values per operation, {os.cpu_count()} cores")
print(f"{'bits':>5} {'operation':<16} {'phe 1 core':>12} {'kinsey 1 core':>14} {'ratio':>7} {'kinsey all':>12} {'ratio':>7}")
for bits in (2048, 3072):
    one = next(x for x in kin if x["bits"] == bits and x["threads"] == 1)
    allc = max((x for x in kin if x["bits"] == bits), key=lambda x: x["threads"])
    for op in ops:
        p = phe_rates[bits][op]
        print(f"{bits:>5} {op[:-6]:<16} {p:>12.0f} {one[op]:>14.0f} {one[op]/p:>6.1f}x {allc[op]:>12.0f} {allc[op]/p:>6.1f}x")
    print(f"{bits:>5} {'encrypt (key holder)':<16} {phe_rates[bits]['encrypt_per_s']:>12.0f} {one['encrypt_key_holder_per_s']:>14.0f} {one['encrypt_key_holder_per_s']/phe_rates[bits]['encrypt_per_s']:>6.1f}x {allc['encrypt_key_holder_per_s']:>12.0f} {allc['encrypt_key_holder_per_s']/phe_rates[bits]['encrypt_per_s']:>6.1f}x")

# Interop through the files.
priv_j = json.load(open(os.path.join(tmp, "keys", "private.json")))
n = util.base64_to_int(priv_j["pub"]["n"])
pub = phe.PaillierPublicKey(n)
priv = phe.PaillierPrivateKey(pub, util.base64_to_int(priv_j["p"]), util.base64_to_int(priv_j["q"]))
c = json.load(open(os.path.join(tmp, "from_kinsey.json")))
v = priv.decrypt(phe.EncryptedNumber(pub, int(c["v"]), exponent=c["e"]))
assert v == -1234.5, v
e = pub.encrypt(3.25, precision=2**-32)
with open(os.path.join(tmp, "from_phe.json"), "w") as f:
    json.dump({"v": str(e.ciphertext()), "e": e.exponent}, f)
out = subprocess.run(["./target/release/kinsey", "keys", "decrypt", "--private", os.path.join(tmp, "keys", "private.json"), os.path.join(tmp, "from_phe.json")], capture_output=True, text=True, check=True).stdout.strip()
assert float(out) == 3.25, out
print("interop: phe decrypted kinsey's ciphertext (-1234.5) and kinsey decrypted phe's (3.25)")
PY
