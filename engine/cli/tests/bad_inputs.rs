//! The bad-input table: every bad input kinsey has been tried with, across all commands, run
//! through the binary. Each must exit non-zero with a message that names the problem and
//! leave no file behind (the working directory and the fixtures are compared before and
//! after). The test writes the table it ran to `docs/bad-inputs.md` and fails if the file
//! in the tree differs, so the table cannot drift from the code: after a change of message,
//! run it with `KINSEY_BLESS=1` and commit the new table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every case, one per line: `what | command line | words the message must contain (separated
/// by " ; ") [| FILE=TEXT present in WORK before the run, which must be kept]`. In the command
/// line `FIX/` is the fixture directory and `WORK/` the case's own empty working directory;
/// words are separated by spaces, and a word with spaces is quoted with `'`. Lines starting
/// with `#` name the command group. The table keeps this order.
const CASES: &str = r#"
# train (TOML config, Parquet parties)
epsilon 0 in the config | train --out WORK/out --config FIX/cfg/eps0.toml | epsilon
epsilon 1e308 in the config | train --out WORK/out --config FIX/cfg/eps_huge.toml | epsilon ; 1e308
a misspelt key (epsylon) | train --out WORK/out --config FIX/cfg/typo.toml | epsylon
an unknown device | train --out WORK/out --config FIX/cfg/device.toml | quantum
an unknown backend | train --out WORK/out --config FIX/cfg/backend.toml | rsa
the insecure mock backend without allow_insecure | train --out WORK/out --config FIX/cfg/mock.toml | allow_insecure
a 512-bit Paillier key | train --out WORK/out --config FIX/cfg/small_key.toml | 512
a zero GPU batch threshold | train --out WORK/out --config FIX/cfg/min_batch.toml | gpu_min_batch ; >= 1
a negative lambda | train --out WORK/out --config FIX/cfg/lambda.toml | lambda
a config that is not TOML | train --out WORK/out --config FIX/cfg/not_toml.toml | not_toml.toml
a missing config file | train --out WORK/out --config FIX/cfg/absent.toml | absent.toml
a missing party file | train --out WORK/out --config FIX/cfg/missing_party.toml | party-9.parquet
a test set without diagnostics (read for nothing) | train --out WORK/out --config FIX/cfg/test_no_diag.toml | test ; diagnostics
a CSV party (the classifier reads Parquet) | train --out WORK/out --config FIX/cfg/csv_party.toml | table.csv ; a CSV file ; to_parquet
a party file that is not Parquet | train --out WORK/out --config FIX/cfg/garbage_party.toml | garbage.parquet
a truncated Parquet file | train --out WORK/out --config FIX/cfg/truncated.toml | truncated.parquet
parties with different columns | train --out WORK/out --config FIX/cfg/schema.toml | party-1.parquet
an identifier column among the features (features = [] by default) | train --out WORK/out --config FIX/cfg/ids.toml | patient_id ; identifier ; [data] features
rows outside the unit ball, no transform declared | train --out WORK/out --config FIX/cfg/ball.toml | unit ball ; party-1.parquet
a NaN feature in a party | train --out WORK/out --config FIX/cfg/nan_party.toml | party-1.parquet
labels other than -1/1 | train --out WORK/out --config FIX/cfg/labels.toml | label
a memory limit that is not a size | train --out WORK/out --config FIX/cfg/ok.toml --memory-limit lots | lots ; MiB
a memory limit too small to stream one block of rows | train --out WORK/out --config FIX/cfg/ok.toml --memory-limit 1MiB | memory_limit ; party 1 ; party-1.parquet ; needs at least ; 1 MiB
a memory_limit in the config that is not a size | train --out WORK/out --config FIX/cfg/memlimit.toml | compute.memory_limit ; plenty
two parties without allow_two_parties (the smaller could compute the other's model) | train --out WORK/out --config FIX/cfg/two.toml | allow_two_parties ; K = 2
an intercept constant outside (0, 1) | train --out WORK/out --config FIX/cfg/intercept.toml | data.intercept ; (0, 1) ; 1.5
LIBSVM parties without their dimension | train --out WORK/out --config FIX/cfg/libsvm_no_dim.toml | data.dim ; libsvm ; number of features
a dimension given to Parquet parties | train --out WORK/out --config FIX/cfg/parquet_dim.toml | data.dim ; only used with format = "libsvm"
an unknown party format | train --out WORK/out --config FIX/cfg/format_csv.toml | data.format ; csv ; libsvm or sparse-parquet
Parquet column names for LIBSVM parties | train --out WORK/out --config FIX/cfg/libsvm_features.toml | data.features ; f1 ..= f3
a LIBSVM party with an index past its dimension | train --out WORK/out --config FIX/cfg/libsvm_bad_index.toml | bad_index.libsvm ; line 2 ; index 9
a Parquet file given as a LIBSVM party | train --out WORK/out --config FIX/cfg/libsvm_parquet.toml | party-1.parquet ; line 1
sparse Parquet parties without their dimension | train --out WORK/out --config FIX/cfg/sparse_no_dim.toml | data.dim ; sparse-parquet ; number of features
Parquet column names for sparse Parquet parties | train --out WORK/out --config FIX/cfg/sparse_features.toml | data.features ; 0-based
a map column and an indices list for sparse Parquet parties | train --out WORK/out --config FIX/cfg/sparse_map_and_lists.toml | data.indices ; map
a sparse key given to dense Parquet parties | train --out WORK/out --config FIX/cfg/parquet_map.toml | data.map ; sparse-parquet
a dense Parquet file given as a sparse Parquet party | train --out WORK/out --config FIX/cfg/sparse_dense_file.toml | party-1.parquet ; indices ; the columns are
a sparse Parquet party with an index past its dimension | train --out WORK/out --config FIX/cfg/sparse_bad_index.toml | a.sparse.parquet ; row 0 ; indices ; outside 0..2
a sparse Parquet party without its map column | train --out WORK/out --config FIX/cfg/sparse_no_map.toml | a.sparse.parquet ; x ; the columns are
a memory limit too small for a LIBSVM party's sparse rows | train --out WORK/out --config FIX/cfg/libsvm_ok.toml --memory-limit 1MiB | memory_limit ; party 1 ; a.libsvm ; sparse (CSR) ; 1 MiB
# predict
a missing model file | predict --model FIX/absent.json --input FIX/parties/test.parquet --out WORK/p.csv | absent.json
a model file that is not JSON | predict --model FIX/table.csv --input FIX/parties/test.parquet --out WORK/p.csv | table.csv
a model with other features than the input | predict --model FIX/model_other.json --input FIX/parties/test.parquet --out WORK/p.csv | f9
a model weight that is not finite (1e999) | predict --model FIX/model_inf.json --input FIX/parties/test.parquet --out WORK/p.csv | model_inf.json
a model with an intercept constant but no (intercept) feature | predict --model FIX/model_icpt.json --input FIX/parties/test.parquet --out WORK/p.csv | model_icpt.json ; (intercept) ; last feature
a tree file from before the bins were recorded | predict --model FIX/tree_old.json --input FIX/table.csv --out WORK/p.csv | tree_old.json ; train the tree again
a tree whose split has the wrong number of children | predict --model FIX/tree_children.json --input FIX/table.csv --out WORK/p.csv | tree_children.json ; 2 children for 3 values
a 0/1 tree attribute holding other values | predict --model FIX/tree_binary.json --input FIX/table.csv --out WORK/p.csv | table.csv ; column 'f' ; row 0 ; 0 or 1
an unknown model kind | predict --model FIX/model_kind.json --input FIX/table.csv --out WORK/p.csv | model_kind.json ; kinsey.forest.v9 ; kinsey.tree.v2
an --id column that does not exist | predict --model FIX/tree_ok.json --input FIX/table.csv --id nope --out WORK/p.csv | nope
a tree given LIBSVM rows (--dim) | predict --model FIX/tree_ok.json --input FIX/a.libsvm --dim 3 --out WORK/p.csv | dim ; Parquet or CSV
LIBSVM text given as Parquet | predict --model FIX/model_other.json --input FIX/a.libsvm --out WORK/p.csv | a.libsvm ; not a Parquet file ; --dim
CSV rows for the classifier | predict --model FIX/model_other.json --input FIX/table.csv --out WORK/p.csv | table.csv ; a CSV file ; to_parquet
a ledger for predict (it releases nothing) | predict --model FIX/model_other.json --input FIX/parties/test.parquet --out WORK/p.csv --ledger WORK/l.jsonl | ledger ; releases nothing
# convert
a CSV given as --libsvm | convert --libsvm FIX/table.csv --dim 3 --out WORK/a.parquet | table.csv ; line 1 ; looks like CSV ; to_parquet
--dim 0 | convert --libsvm FIX/a.libsvm --dim 0 --out WORK/a.parquet | dim
--dim 1e8 (past the limit, before allocating) | convert --libsvm FIX/a.libsvm --dim 100000000 --out WORK/a.parquet | dim ; 1048576
--dim 2^64 - 1 | convert --libsvm FIX/a.libsvm --dim 18446744073709551615 --out WORK/a.parquet | dim
a LIBSVM index past --dim | convert --libsvm FIX/bad_index.libsvm --dim 3 --out WORK/a.parquet | bad_index.libsvm ; line 2
a LIBSVM index past --dim, converted sparse | convert --libsvm FIX/bad_index.libsvm --dim 3 --sparse --out WORK/a.parquet | bad_index.libsvm ; line 2
a LIBSVM label that is not -1/+1 | convert --libsvm FIX/bad_label.libsvm --dim 3 --out WORK/a.parquet | bad_label.libsvm ; the label is not in
a NaN value in LIBSVM | convert --libsvm FIX/nan.libsvm --dim 3 --out WORK/a.parquet | nan.libsvm ; line 1
a missing LIBSVM file | convert --libsvm /nonexistent/file --dim 3 --out WORK/a.parquet | /nonexistent/file
an unknown label encoding | convert --libsvm FIX/a.libsvm --dim 3 --labels maybe --out WORK/a.parquet | maybe
# split
sizes that need more rows than the input has | split --input FIX/parties/test.parquet --sizes 100000,5 --out WORK/s --seed 1 | sizes ; 100005
fractions that do not sum to 1 | split --input FIX/parties/test.parquet --fractions 0.5,0.7 --out WORK/s --seed 1 | fractions
neither sizes nor fractions | split --input FIX/parties/test.parquet --out WORK/s --seed 1 | sizes
# generate
--parties 0 | generate --parties 0 --rows 100 --dim 3 --out WORK/g | parties
--correlation 1.5 | generate --parties 2 --rows 100 --dim 3 --correlation 1.5 --out WORK/g | correlation
--signal NaN | generate --parties 2 --rows 100 --dim 3 --signal NaN --out WORK/g | signal
rows x dim past the 1 TiB output limit (generate writes in blocks) | generate --parties 2 --rows 2000000000 --dim 1000 --out WORK/g | GiB
# decay
an unknown model lists all seven | decay --input FIX/series.csv --model exp --epsilon 1 --out WORK/d.csv --bound 2 | window ; allwindow ; exponential ; polynomial ; running ; laplace ; rr
a column series without --bound (no default: it is declared, not guessed) | decay --input FIX/series.csv --model window --window 4 --epsilon 1 --out WORK/d.csv | bound ; is required ; --clamp-check
a clamp check with epsilon 0 | decay --input FIX/series.csv --model window --window 4 --bound 5 --clamp-check 0 --epsilon 1 --out WORK/d.csv | clamp-check
a negative epsilon | decay --input FIX/series.csv --model window --window 4 --epsilon -1 --out WORK/d.csv --bound 2 | epsilon
alpha outside (0, 1) | decay --input FIX/series.csv --model exponential --alpha 1.5 --epsilon 1 --out WORK/d.csv --bound 2 | alpha
window 0 | decay --input FIX/series.csv --model window --window 0 --epsilon 1 --out WORK/d.csv --bound 2 | window
an unknown mechanism | decay --input FIX/series.csv --model window --window 4 --mechanism sparkle --epsilon 1 --out WORK/d.csv --bound 2 | mechanism ; sparkle ; tree ; kary ; smooth ; best
the smooth tree for a window (it computes running sums) | decay --input FIX/series.csv --model window --window 4 --mechanism smooth --epsilon 1 --out WORK/d.csv --bound 2 | mechanism ; smooth ; running
the window's square-root factorization under pure DP | decay --input FIX/series.csv --model window --window 4 --mechanism sqrt --epsilon 1 --out WORK/d.csv --bound 2 | sqrt ; --privacy zcdp ; --rho
the window's square-root factorization for a running sum | decay --input FIX/series.csv --model running --mechanism sqrt --privacy zcdp --rho 0.5 --out WORK/d.csv --bound 2 | sqrt ; window ; running
the k-ary tree for a model it does not compute | decay --input FIX/series.csv --model polynomial --c 2 --mechanism kary --epsilon 1 --out WORK/d.csv --bound 2 | polynomial ; --mechanism tree
an arity of 1 | decay --input FIX/series.csv --model window --window 4 --mechanism kary --arity 1 --epsilon 1 --out WORK/d.csv --bound 2 | arity ; 1
the GPU for the k-ary tree (no GPU path) | decay --input FIX/series.csv --model window --window 4 --mechanism kary --device gpu --epsilon 1 --out WORK/d.csv --bound 2 | device ; k-ary ; --device cpu
--arity without --mechanism kary | decay --input FIX/series.csv --model window --window 4 --arity 4 --epsilon 1 --out WORK/d.csv --bound 2 | arity ; --mechanism kary
window blocks past the limit (arity 256, W = 2^24) | decay --input FIX/series.csv --model window --window 16777216 --mechanism kary --arity 256 --epsilon 1 --out WORK/d.csv --bound 2 | arity ; limit
blt under pure DP (it adds Gaussian noise) | decay --input FIX/series.csv --model window --window 4 --mechanism blt --epsilon 1 --out WORK/d.csv --bound 2 | blt ; --privacy zcdp ; --rho
--privacy zcdp without --rho | decay --input FIX/series.csv --model window --window 4 --privacy zcdp --out WORK/d.csv --bound 2 | --rho
--privacy zcdp with --epsilon (the budget is rho) | decay --input FIX/series.csv --model window --window 4 --privacy zcdp --rho 0.5 --epsilon 1 --out WORK/d.csv --bound 2 | epsilon ; --rho
a zCDP rho whose epsilon is past 100 | decay --input FIX/series.csv --model window --window 4 --privacy zcdp --rho 1000 --out WORK/d.csv --bound 2 | rho 1000 ; epsilon ; 100
a zCDP rho of 0 | decay --input FIX/series.csv --model window --window 4 --privacy zcdp --rho 0 --out WORK/d.csv --bound 2 | rho ; 0
a zCDP delta of 1 | decay --input FIX/series.csv --model window --window 4 --privacy zcdp --rho 0.5 --delta 1 --out WORK/d.csv --bound 2 | delta
--rho under pure DP | decay --input FIX/series.csv --model window --window 4 --rho 0.5 --epsilon 1 --out WORK/d.csv --bound 2 | --rho ; --privacy zcdp
a zCDP model the Gaussian family does not compute | decay --input FIX/series.csv --model polynomial --c 2 --privacy zcdp --rho 0.5 --out WORK/d.csv --bound 2 | zcdp ; polynomial
a zCDP mechanism that does not exist | decay --input FIX/series.csv --model window --window 4 --mechanism sparkle --privacy zcdp --rho 0.5 --out WORK/d.csv --bound 2 | sparkle ; blt ; sqrt
a horizon shorter than the series (blt) | decay --input FIX/series.csv --model running --horizon 2 --mechanism blt --privacy zcdp --rho 0.5 --out WORK/d.csv --bound 2 | horizon ; 2
the GPU for a zCDP mechanism (no GPU path) | decay --input FIX/series.csv --model window --window 4 --privacy zcdp --rho 0.5 --mechanism blt --device gpu --out WORK/d.csv --bound 2 | device ; zCDP ; --device cpu
the GPU for the Gaussian tree | decay --input FIX/series.csv --model running --privacy zcdp --rho 0.5 --device gpu --out WORK/d.csv --bound 2 | device ; zCDP ; --device cpu
polynomial c <= 1 | decay --input FIX/series.csv --model polynomial --c 0.5 --epsilon 1 --out WORK/d.csv --bound 2 | c
beta outside (0, 1) | decay --input FIX/series.csv --model polynomial --c 2 --beta 1.5 --epsilon 1 --out WORK/d.csv --bound 2 | beta
a polynomial horizon whose far lags epsilon cannot reach | decay --input FIX/series.csv --model polynomial --c 1.2 --beta 0.3 --epsilon 1 --horizon 100000000 --out WORK/d.csv --bound 2 | lags from 355347 ; beta B ; at most 355346 steps ; --epsilon
a missing column | decay --input FIX/series.csv --column nope --model window --window 4 --epsilon 1 --out WORK/d.csv --bound 2 | nope
a NaN step value | decay --input FIX/series_nan.csv --model window --window 4 --epsilon 1 --out WORK/d.csv --bound 2 | series_nan.csv ; row 1
a negative step value | decay --input FIX/series_neg.csv --model window --window 4 --epsilon 1 --out WORK/d.csv --bound 2 | series_neg.csv
a 0/1 text with a 2 | decay --input FIX/bad_bits.txt --model window --window 4 --epsilon 1 --out WORK/d.csv | bad_bits.txt
one 1970 event among 2020 ones | decay --input FIX/events.csv --time-column date --start 2020-01-01T00:00 --end 2020-01-02T00:00 --step 1s --model window --window 4 --epsilon 1 --out WORK/d.csv --bound 2 | sorted ; row 1
time-bucketed events without a public --start/--end | decay --input FIX/events.csv --time-column date --model window --window 4 --epsilon 1 --out WORK/d.csv --bound 2 | start
a time range of 1.6e9 one-second steps (past the 2^28 limit) | decay --input FIX/events_sorted.csv --time-column date --start 1970-01-01T00:00 --end 2020-01-02T00:00 --step 1s --model window --window 4 --epsilon 1 --out WORK/d.csv --bound 2 | steps
a step width that is not one | decay --input FIX/events.csv --time-column date --start 2020-01-01T00:00 --end 2020-01-02T00:00 --step 5x --model window --window 4 --epsilon 1 --out WORK/d.csv --bound 2 | 5x
a predicate that does not parse | decay --input FIX/events.csv --time-column date --start 2020-01-01T00:00 --end 2020-01-02T00:00 --where delay=>15 --model window --window 4 --epsilon 1 --out WORK/d.csv --bound 2 | delay= ; not found
chunks of 0 steps | decay --input FIX/series.csv --model window --window 4 --epsilon 1 --chunk 0 --out WORK/d.csv --bound 2 | chunk ; 1 to 2^28
chunks past 2^28 steps (2 GiB a column) | decay --input FIX/series.csv --model window --window 4 --epsilon 1 --chunk 300000000 --out WORK/d.csv --bound 2 | chunk ; 2^28
exponential's --alpha given to a window | decay --input FIX/series.csv --model window --window 4 --alpha 0.5 --epsilon 1 --bound 2 --out WORK/d.csv | alpha ; exponential ; 'window'
a --window given to a running sum | decay --input FIX/series.csv --model running --window 4 --epsilon 1 --bound 2 --out WORK/d.csv | window ; 'running'
a --horizon given to a window on the tree | decay --input FIX/series.csv --model window --window 4 --horizon 100 --epsilon 1 --bound 2 --out WORK/d.csv | horizon ; 'window'
a --beta given to a window (polynomial's) | decay --input FIX/series.csv --model window --window 4 --beta 0.2 --epsilon 1 --bound 2 --out WORK/d.csv | beta ; polynomial ; 'window'
a release chart past the series' end | decay --input FIX/series.csv --model window --window 4 --epsilon 1 --bound 2 --plot --plot-range 0:99999 --out WORK/d.csv | plot-range ; 0:99999
a device that is not auto, cpu or gpu | decay --input FIX/series.csv --model window --window 4 --epsilon 1 --device tpu --out WORK/d.csv --bound 2 | tpu ; auto, cpu or gpu
the GPU for a model without a GPU path | decay --input FIX/series.csv --model allwindow --windows 2,4 --epsilon 1 --device gpu --out WORK/d.csv --bound 2 | allwindow ; no GPU path
# histogram
epsilon 1e308 | histogram --input FIX/table.csv --column f --bins 0:10:5 --epsilon 1e308 --neighbours bounded --out WORK/h | epsilon
epsilon 1e-308 | histogram --input FIX/table.csv --column f --bins 0:10:5 --epsilon 1e-308 --neighbours bounded --out WORK/h | epsilon
a CSV separated by ';' | histogram --input FIX/semicolons.csv --column f --epsilon 1 --neighbours bounded --out WORK/h | semicolons.csv ; ';' ; comma-separated
a row with an unquoted comma (more cells than the header) | histogram --input FIX/ragged.csv --column f --epsilon 1 --neighbours bounded --out WORK/h | ragged.csv ; row 1 ; 3 cells ; double quotes
a quote left open to the end of the file | stats sum --input FIX/open_quote.csv --column f --bounds 0:10 --epsilon 1 --neighbours bounded --out WORK/s | open_quote.csv ; row 1 ; not closed
an output path through a file | histogram --input FIX/table.csv --column f --epsilon 1 --neighbours bounded --out FIX/table.csv/h | table.csv ; is a file, not a directory
a negative epsilon (a value, not an unknown flag) | histogram --input FIX/table.csv --column f --bins 0:10:5 --epsilon -1 --neighbours bounded --out WORK/h | epsilon ; got -1
epsilon inf in count mode | histogram --input FIX/table.csv --column f --epsilon inf --neighbours bounded --out WORK/h | epsilon
bins with two fields | histogram --input FIX/table.csv --column f --bins 0:10 --epsilon 1 --neighbours bounded --out WORK/h | 0:10
bins with LO >= HI | histogram --input FIX/table.csv --column f --bins 5:1:3 --epsilon 1 --neighbours bounded --out WORK/h | bins
a missing column | histogram --input FIX/table.csv --column nope --epsilon 1 --neighbours bounded --out WORK/h | nope
an unknown neighbour definition | histogram --input FIX/table.csv --column f --epsilon 1 --neighbours sideways --out WORK/h | sideways
NaN at row 1, count mode | histogram --input FIX/table_nan.csv --column f --epsilon 1 --neighbours bounded --out WORK/h | table_nan.csv ; row 0
inf at row 3, with bins | histogram --input FIX/table_inf.csv --column f --bins 0:10:5 --epsilon 1 --neighbours bounded --out WORK/h | table_inf.csv ; row 2
a bad cell past the first block | histogram --input FIX/long_bad.csv --column f --bins 0:10:5 --epsilon 1 --neighbours bounded --out WORK/h | long_bad.csv ; row 69999 ; not a number
a filter column with a bad cell past the first block | histogram --input FIX/long_bad.csv --column g --where f>1 --epsilon 1 --neighbours unbounded --out WORK/h | long_bad.csv ; row 69999 ; column 'f'
LIBSVM text named .csv given to histogram | histogram --input FIX/libsvm_named.csv --column f --epsilon 1 --neighbours bounded --out WORK/h | libsvm_named.csv ; looks like LIBSVM ; kinsey convert --libsvm
a missing input | histogram --input FIX/absent.csv --column f --epsilon 1 --neighbours bounded --out WORK/h | absent.csv
# stats
bounds without a colon | stats mean --input FIX/table.csv --column f --bounds 10 --epsilon 1 --neighbours bounded --out WORK/s | LO:HI ; 10
bounds with LO >= HI | stats sum --input FIX/table.csv --column f --bounds 5:1 --epsilon 1 --neighbours bounded --out WORK/s | bounds ; LO < HI
bounds too narrow for their magnitude | stats mean --input FIX/table.csv --column f --bounds 1e15:1000000000000000.5 --epsilon 1 --neighbours bounded --out WORK/s | bounds ; too narrow
a negative epsilon | stats variance --input FIX/table.csv --column f --bounds 0:10 --epsilon -1 --neighbours bounded --out WORK/s | epsilon ; -1
a quantile level of 1.5 | stats quantiles --input FIX/table.csv --column f --bounds 0:10 --levels 1.5 --epsilon 1 --neighbours bounded --out WORK/s | 1.5 ; (0, 1)
a quantile level with seven decimals | stats quantiles --input FIX/table.csv --column f --bounds 0:10 --levels 0.1234567 --epsilon 1 --neighbours bounded --out WORK/s | 0.1234567 ; six decimals
one quantile candidate | stats quantiles --input FIX/table.csv --column f --bounds 0:10 --candidates 1 --epsilon 1 --neighbours bounded --out WORK/s | candidates
a NaN value | stats mean --input FIX/table_nan.csv --column f --bounds 0:10 --epsilon 1 --neighbours unbounded --out WORK/s | table_nan.csv ; row 0 ; finite
a bad cell past the first block | stats quantiles --input FIX/long_bad.csv --column f --bounds 0:10 --epsilon 1 --neighbours bounded --out WORK/s | long_bad.csv ; row 69999 ; not a number
a missing column | stats sum --input FIX/table.csv --column nope --bounds 0:10 --epsilon 1 --neighbours bounded --out WORK/s | nope
# ledger
a ledger without a budget for a new data set | stats mean --input FIX/table.csv --column f --bounds 0:10 --epsilon 1 --neighbours bounded --out WORK/s --ledger WORK/l.jsonl | ledger-budget
a budget that is not a number | stats mean --input FIX/table.csv --column f --bounds 0:10 --epsilon 1 --neighbours bounded --out WORK/s --ledger WORK/l.jsonl --ledger-budget lots | lots ; EPSILON
a budget of epsilon 0 | stats mean --input FIX/table.csv --column f --bounds 0:10 --epsilon 1 --neighbours bounded --out WORK/s --ledger WORK/l.jsonl --ledger-budget 0 | ledger-budget
an edited ledger (kept as it is) | stats mean --input FIX/table.csv --column f --bounds 0:10 --epsilon 1 --neighbours bounded --out WORK/s --ledger WORK/l.jsonl --ledger-budget 5 | l.jsonl ; line 1 ; append-only | l.jsonl=not a ledger
ledger show without --ledger | ledger show | --ledger
ledger show of an edited ledger | ledger show --ledger WORK/l.jsonl | l.jsonl ; line 1 ; not a ledger entry | l.jsonl=not a ledger
ledger init over an existing file | ledger init --ledger WORK/l.jsonl | l.jsonl ; exists | l.jsonl=not a ledger
# tree
--test without --diagnostics (it would be read for nothing) | tree --input FIX/table.csv --attributes a,b --test FIX/table.csv --epsilon 1 --neighbours bounded --out WORK/t | --test ; --diagnostics
depth 100000 | tree --input FIX/table.csv --attributes a,b --depth 100000 --epsilon 1 --neighbours bounded --out WORK/t | depth
a negative epsilon | tree --input FIX/table.csv --attributes a,b --epsilon -0.5 --neighbours bounded --out WORK/t | epsilon ; -0.5
a missing label column | tree --input FIX/table.csv --label nope --attributes a,b --epsilon 1 --neighbours bounded --out WORK/t | nope
an attribute spec that does not parse | tree --input FIX/table.csv --attributes f:0:x:3 --epsilon 1 --neighbours bounded --out WORK/t | f:0:x:3
an unknown selection | tree --input FIX/table.csv --attributes a,b --selection magic --epsilon 1 --neighbours bounded --out WORK/t | magic
a label value outside the declared classes | tree --input FIX/table.csv --attributes a,b --classes 0,1 --epsilon 1 --neighbours bounded --out WORK/t | label
a non-binary attribute declared 0/1 | tree --input FIX/table.csv --attributes f --epsilon 1 --neighbours bounded --out WORK/t | f
# sulq
k-means with k = 0 | sulq kmeans --input FIX/table.csv --columns a,b --k 0 --epsilon 1 --neighbours bounded --out WORK/k | k
k-means on values outside [0, 1] without --clip | sulq kmeans --input FIX/table.csv --columns f --epsilon 1 --neighbours bounded --out WORK/k | f
a perceptron's --test without --diagnostics (read for nothing) | sulq perceptron --input FIX/table.csv --columns f:0:10,a --test FIX/table.csv --epsilon 1 --neighbours bounded --out WORK/pc | test ; diagnostics
PCA with delta 1 | sulq pca --input FIX/table.csv --columns a,b --delta 1 --epsilon 1 --neighbours bounded --out WORK/p | delta
PCA with more components than columns | sulq pca --input FIX/table.csv --columns a,b --components 5 --epsilon 1 --neighbours bounded --out WORK/p | components
# keys
decrypt: exponent e = -1e9 | keys decrypt --allow-insecure-test-keys --private FIX/keys/private.json FIX/ct_exponent.json | ct_exponent.json ; exponent
decrypt: a ciphertext under another key | keys decrypt --allow-insecure-test-keys --private FIX/keys/private.json FIX/ct_foreign.json | ct_foreign.json
decrypt: v is not a number | keys decrypt --allow-insecure-test-keys --private FIX/keys/private.json FIX/ct_text.json | ct_text.json
decrypt: v past n^2 | keys decrypt --allow-insecure-test-keys --private FIX/keys/private.json FIX/ct_range.json | ct_range.json
decrypt: inline JSON instead of a path | keys decrypt --allow-insecure-test-keys --private FIX/keys/private.json '{"v": "17", "e": -8}' | JSON text
decrypt: a private key that is not a key | keys decrypt --private FIX/table.csv FIX/ct.json | table.csv
decrypt: a test-size key without the flag | keys decrypt --private FIX/keys/private.json FIX/ct.json | 2048
encrypt: NaN | keys encrypt --allow-insecure-test-keys --public FIX/keys/public.json NaN | value ; NaN
generate: a 100-bit key | keys generate --bits 100 --allow-insecure-test-keys --out WORK/k | 100
import: a public key given as the private one | keys import --private FIX/keys/public.json --out WORK/k | public.json
# session, party, curator, experiment, bench
session init with 0 parties | session init --parties 0 --out WORK/s | parties
party with a missing config | party --config FIX/absent.toml | absent.toml
curator with a train config | curator --config FIX/cfg/ok.toml | ok.toml
figure 2 with 0 runs | experiment figure2 --runs 0 --out WORK/f | runs
bench decay with 0 steps | bench decay --steps 0 | steps
a LIBSVM index past --dim, kept sparse | bench train --libsvm FIX/bad_index.libsvm --dim 3 --sparse | bad_index.libsvm ; line 2 ; index 9
--sparse without a LIBSVM file | bench train --rows 10 --dim 3 --sparse | --libsvm
bench decay with chunks of 0 steps (never advanced) | bench decay --steps 10 --chunk 0 | chunk
bench paillier on an unknown device | bench paillier --bits 2048 --count 1 --threads 1 --device tpu | device ; tpu
a Paillier crossover with no GPU path | bench paillier --crossover --bits 2048 --device cpu | crossover ; GPU
a Paillier crossover of batches up to 0 | bench paillier --crossover --bits 2048 --device gpu --max-batch 0 | max-batch ; 0
a GPU probe of transfers that are no whole words | bench gpu-probe --bytes 6 | bytes ; 6 bytes ; multiple of 4
a GPU probe compiling a limbs program past the largest modulus | bench gpu-probe --bytes 4096 --compile-words 64,9999 | compile-words ; 9999
a private-memory probe of a 0-word modulus | bench gpu-private --words 0 | words ; 0
demo with an unknown crypto device | demo --out WORK/d --crypto-device tpu --parties 2 --dim 2 --smallest-party 200 | device ; tpu
demo with an intercept constant of 0 | demo --out WORK/d --parties 3 --dim 2 --smallest-party 200 --intercept 0 | intercept ; (0, 1)
demo parties past the disk their spill would take | demo --out WORK/d --parties 3 --dim 1000 --smallest-party 1000000000 | --smallest-party ; GiB ; 1024
demo with a memory limit too small to stream one block of generated rows | demo --out WORK/d --parties 3 --dim 20 --smallest-party 200000 --memory-limit 1MiB | memory_limit ; party 1 ; synthetic party 1 ; 1 MiB
demo with a memory limit and separate processes | demo --out WORK/d --processes --memory-limit 1GiB | memory-limit ; --processes
demo with two parties without --allow-two-parties | demo --out WORK/d --parties 2 --dim 2 --smallest-party 200 --backend mock --allow-insecure | allow_two_parties ; K = 2
a session of two parties without --allow-two-parties | session init --parties 2 --out WORK/s | allow_two_parties ; K = 2
a second run into an earlier result without --overwrite | histogram --input FIX/table.csv --column f --epsilon 1 --neighbours bounded --out WORK/h | --overwrite ; histogram.csv | h/histogram.csv=earlier
"#;

/// One bad input.
struct Case {
    what: String,
    args: Vec<String>,
    expect: Vec<String>,
    /// Files present in WORK before the run (an earlier result), which must be kept.
    before: Vec<(String, String)>,
}

/// Words separated by spaces, `'` quoting a word with spaces.
fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for ch in s.chars() {
        match ch {
            '\'' => quoted = !quoted,
            ' ' if !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn cases() -> Vec<Case> {
    CASES
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split(" | ").collect();
            assert!(f.len() == 3 || f.len() == 4, "bad case line: {l}");
            Case {
                what: f[0].to_string(),
                args: words(f[1]),
                expect: f[2].split(" ; ").map(str::to_string).collect(),
                before: f
                    .get(3)
                    .map(|b| {
                        let (p, t) = b.split_once('=').expect("FILE=TEXT");
                        vec![(p.to_string(), format!("{t}\n"))]
                    })
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// Files under `dir` with their contents (the state a case must not change).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut m = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("ls") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                m.insert(p.clone(), b"<dir>".to_vec());
                stack.push(p);
            } else {
                m.insert(p.clone(), std::fs::read(&p).expect("read"));
            }
        }
    }
    m
}

fn kinsey(cwd: &Path, args: &[String]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kinsey"))
        .args(args)
        .current_dir(cwd)
        .env("KINSEY_NO_PROGRESS", "1")
        .env("KINSEY_LOG", "warn")
        .output()
        .expect("kinsey runs")
}

fn ok(cwd: &Path, args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let o = kinsey(cwd, &args);
    assert!(
        o.status.success(),
        "fixture step {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn write(p: &Path, text: &str) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(p, text).expect("write");
}

/// A train config over `parties` (relative to the fixture directory) with extra lines.
fn train_cfg(fix: &Path, name: &str, parties: &[&str], privacy: &str, extra: &str) {
    let list: Vec<String> = parties
        .iter()
        .map(|p| format!("\"{}\"", fix.join(p).display()))
        .collect();
    write(
        &fix.join("cfg").join(name),
        &format!(
            "[data]\nparties = [{}]\n{extra}\n[privacy]\n{privacy}\nallow_two_parties = true\n[compute]\ndevice = \"cpu\"\n",
            list.join(", ")
        ),
    );
}

/// Everything the cases read, built once.
fn fixtures(fix: &Path) {
    ok(
        fix,
        &[
            "generate",
            "--parties",
            "2",
            "--rows",
            "400",
            "--dim",
            "3",
            "--out",
            "parties",
            "--seed",
            "1",
        ],
    );
    ok(
        fix,
        &[
            "generate",
            "--parties",
            "1",
            "--rows",
            "200",
            "--dim",
            "4",
            "--out",
            "other",
            "--seed",
            "2",
        ],
    );
    let p1 = fix.join("parties").join("party-1.parquet");
    let ds = kinsey_data::parquet_io::read_parquet(&p1, &Default::default()).expect("read");
    let put = |target: PathBuf, ds: &kinsey_data::Dataset| {
        let mut o = kinsey_data::output::Outputs::new();
        kinsey_data::parquet_io::write_parquet(&mut o, &target, ds, "label").expect("write");
        o.commit().expect("commit");
    };
    let mut big = ds.clone();
    big.x.iter_mut().for_each(|v| *v *= 10.0);
    put(fix.join("big").join("party-1.parquet"), &big);
    let mut nan = ds.clone();
    nan.x[4] = f32::NAN;
    put(fix.join("nan").join("party-1.parquet"), &nan);
    let mut ids = ds.clone();
    ids.features[0] = "patient_id".into();
    put(fix.join("ids").join("party-1.parquet"), &ids);
    let mut labels = ds.clone();
    labels.y[3] = 0.0;
    put(fix.join("labels").join("party-1.parquet"), &labels);
    write(&fix.join("garbage.parquet"), "garbage");
    let bytes = std::fs::read(&p1).expect("read");
    std::fs::write(fix.join("truncated.parquet"), &bytes[..bytes.len() / 2]).expect("write");

    train_configs(fix);
    text_fixtures(fix);
    key_fixtures(fix);
}

/// `kinsey train` configs over the parquet fixtures, one per bad case.
fn train_configs(fix: &Path) {
    let two = ["parties/party-1.parquet", "parties/party-2.parquet"];
    let plain = "[crypto]\naggregation = \"plaintext\"";
    train_cfg(fix, "ok.toml", &two, "epsilon = 1.0", plain);
    write(
        &fix.join("cfg").join("two.toml"),
        &std::fs::read_to_string(fix.join("cfg").join("ok.toml"))
            .expect("read")
            .replace("allow_two_parties = true\n", ""),
    );
    train_cfg(fix, "eps0.toml", &two, "epsilon = 0.0", plain);
    write(
        &fix.join("cfg").join("memlimit.toml"),
        &format!(
            "{}memory_limit = \"plenty\"\n",
            std::fs::read_to_string(fix.join("cfg").join("ok.toml")).expect("read")
        ),
    );
    train_cfg(
        fix,
        "intercept.toml",
        &two,
        "epsilon = 1.0",
        &format!("intercept = 1.5\n{plain}"),
    );
    train_cfg(fix, "eps_huge.toml", &two, "epsilon = 1e308", plain);
    train_cfg(
        fix,
        "typo.toml",
        &two,
        "epsilon = 1.0\nepsylon = 2.0",
        plain,
    );
    write(
        &fix.join("cfg").join("device.toml"),
        &std::fs::read_to_string(fix.join("cfg").join("ok.toml"))
            .expect("read")
            .replace("device = \"cpu\"", "device = \"quantum\""),
    );
    train_cfg(
        fix,
        "backend.toml",
        &two,
        "epsilon = 1.0",
        "[crypto]\nbackend = \"rsa\"",
    );
    train_cfg(
        fix,
        "mock.toml",
        &two,
        "epsilon = 1.0",
        "[crypto]\nbackend = \"mock\"",
    );
    train_cfg(
        fix,
        "small_key.toml",
        &two,
        "epsilon = 1.0",
        "[crypto]\nkey_bits = 512",
    );
    train_cfg(
        fix,
        "min_batch.toml",
        &two,
        "epsilon = 1.0",
        "[crypto]\ndevice = \"auto\"\ngpu_min_batch = 0",
    );
    train_cfg(
        fix,
        "lambda.toml",
        &two,
        "epsilon = 1.0",
        "[model]\nlambda = -0.5\n[crypto]\naggregation = \"plaintext\"",
    );
    write(&fix.join("cfg").join("not_toml.toml"), "[data\nparties = ");
    train_cfg(
        fix,
        "csv_party.toml",
        &["parties/party-1.parquet", "table.csv"],
        "epsilon = 1.0",
        plain,
    );
    train_cfg(
        fix,
        "test_no_diag.toml",
        &two,
        "epsilon = 1.0",
        &format!(
            "test = \"{}\"\n{plain}",
            fix.join("parties/test.parquet").display()
        ),
    );
    train_cfg(
        fix,
        "missing_party.toml",
        &["parties/party-1.parquet", "parties/party-9.parquet"],
        "epsilon = 1.0",
        plain,
    );
    train_cfg(
        fix,
        "garbage_party.toml",
        &["parties/party-1.parquet", "garbage.parquet"],
        "epsilon = 1.0",
        plain,
    );
    train_cfg(
        fix,
        "truncated.toml",
        &["parties/party-1.parquet", "truncated.parquet"],
        "epsilon = 1.0",
        plain,
    );
    train_cfg(
        fix,
        "schema.toml",
        &["parties/party-1.parquet", "other/party-1.parquet"],
        "epsilon = 1.0",
        plain,
    );
    train_cfg(
        fix,
        "ids.toml",
        &["ids/party-1.parquet", "parties/party-2.parquet"],
        "epsilon = 1.0",
        plain,
    );
    train_cfg(
        fix,
        "ball.toml",
        &["big/party-1.parquet", "parties/party-2.parquet"],
        "epsilon = 1.0",
        plain,
    );
    train_cfg(
        fix,
        "nan_party.toml",
        &["nan/party-1.parquet", "parties/party-2.parquet"],
        "epsilon = 1.0",
        plain,
    );
    train_cfg(
        fix,
        "labels.toml",
        &["labels/party-1.parquet", "parties/party-2.parquet"],
        "epsilon = 1.0",
        plain,
    );
    libsvm_configs(fix, plain);
}

/// `kinsey train` configs over LIBSVM parties (`format = "libsvm"`), and the format keys
/// given where they do not belong.
fn libsvm_configs(fix: &Path, plain: &str) {
    let two = ["parties/party-1.parquet", "parties/party-2.parquet"];
    let svm = ["a.libsvm", "a.libsvm"];
    let eps = "epsilon = 1.0";
    let cases: [(&str, &[&str], &str); 7] = [
        ("libsvm_no_dim.toml", &svm, "format = \"libsvm\""),
        ("parquet_dim.toml", &two, "dim = 3"),
        ("format_csv.toml", &two, "format = \"csv\""),
        (
            "libsvm_features.toml",
            &svm,
            "format = \"libsvm\"\ndim = 3\nfeatures = [\"x\"]",
        ),
        (
            "libsvm_bad_index.toml",
            &["a.libsvm", "bad_index.libsvm"],
            "format = \"libsvm\"\ndim = 3",
        ),
        ("libsvm_parquet.toml", &two, "format = \"libsvm\"\ndim = 3"),
        ("libsvm_ok.toml", &svm, "format = \"libsvm\"\ndim = 3"),
    ];
    for (name, parties, data) in cases {
        train_cfg(fix, name, parties, eps, &format!("{data}\n{plain}"));
    }
    // a.libsvm's rows as sparse Parquet (indices 0 and 2; 1).
    let csr = kinsey_data::sparse::SparseDataset {
        indptr: vec![0, 2, 3],
        indices: vec![0, 2, 1],
        values: vec![0.5, 0.2, 0.1],
        y: vec![1.0, -1.0],
        d: 3,
        features: Vec::new(),
        source: "a".into(),
    };
    let mut o = kinsey_data::output::Outputs::new();
    let target = fix.join("a.sparse.parquet");
    let mut w = kinsey_data::sparse_parquet::SparseParquetRows::create(&mut o, &target, "label")
        .expect("create");
    w.write(&csr).expect("write");
    w.finish().expect("finish");
    o.commit().expect("commit");
    let sp = ["a.sparse.parquet", "a.sparse.parquet"];
    let f = "format = \"sparse-parquet\"";
    let sparse: [(&str, &[&str], String); 7] = [
        ("sparse_no_dim.toml", &sp, f.into()),
        (
            "sparse_features.toml",
            &sp,
            format!("{f}\ndim = 3\nfeatures = [\"x\"]"),
        ),
        (
            "sparse_map_and_lists.toml",
            &sp,
            format!("{f}\ndim = 3\nmap = \"x\"\nindices = \"i\""),
        ),
        ("parquet_map.toml", &two, "map = \"x\"".into()),
        ("sparse_dense_file.toml", &two, format!("{f}\ndim = 3")),
        ("sparse_bad_index.toml", &sp, format!("{f}\ndim = 2")),
        (
            "sparse_no_map.toml",
            &sp,
            format!("{f}\ndim = 3\nmap = \"x\""),
        ),
    ];
    for (name, parties, data) in sparse {
        train_cfg(fix, name, parties, eps, &format!("{data}\n{plain}"));
    }
}

/// Model, LIBSVM, CSV, series and event files.
fn text_fixtures(fix: &Path) {
    let model = |features: &str, w: &str| {
        format!(
            "{{\"kind\": \"kinsey.dp_aggregate_logistic.v1\", \"features\": [{features}], \"label\": \"label\", \"row_transform\": {{\"kind\": \"none\"}}, \"w\": [{w}], \"epsilon\": 1.0}}"
        )
    };
    write(
        &fix.join("model_other.json"),
        &model("\"f1\", \"f2\", \"f9\"", "0.1, 0.2, 0.3"),
    );
    write(
        &fix.join("model_inf.json"),
        &model("\"f1\", \"f2\", \"f3\"", "0.1, 1e999, 0.3"),
    );
    write(
        &fix.join("model_icpt.json"),
        &model("\"f1\", \"f2\", \"f3\"", "0.1, 0.2, 0.3")
            .replace("\"epsilon\"", "\"intercept\": 0.5, \"epsilon\""),
    );

    write(
        &fix.join("tree_old.json"),
        "{\"kind\": \"leaf\", \"class\": 0, \"counts\": [1.0, 2.0]}",
    );
    let tree = |bins: &str, children: &str| {
        format!(
            "{{\"kind\": \"kinsey.tree.v2\", \"label\": \"label\", \"classes\": [-1.0, 1.0], \"attributes\": [{{\"name\": \"f\", \"bins\": {bins}}}], \"root\": {{\"kind\": \"split\", \"attribute\": 0, \"name\": \"f\", \"count\": 9.0, \"children\": [{children}]}}}}"
        )
    };
    let leaf = "{\"kind\": \"leaf\", \"class\": 0, \"counts\": [1.0, 2.0]}";
    write(
        &fix.join("tree_ok.json"),
        &tree("[0.0, 10.0, 2]", &format!("{leaf}, {leaf}")),
    );
    write(
        &fix.join("tree_children.json"),
        &tree("[0.0, 10.0, 3]", &format!("{leaf}, {leaf}")),
    );
    write(
        &fix.join("tree_binary.json"),
        &tree("null", &format!("{leaf}, {leaf}")),
    );
    write(
        &fix.join("model_kind.json"),
        "{\"kind\": \"kinsey.forest.v9\"}",
    );

    write(&fix.join("a.libsvm"), "+1 1:0.5 3:0.2\n-1 2:0.1\n");
    write(&fix.join("libsvm_named.csv"), "+1 1:0.5 3:0.2\n-1 2:0.1\n");
    write(&fix.join("bad_index.libsvm"), "+1 1:0.5\n-1 9:0.1\n");
    write(&fix.join("bad_label.libsvm"), "7 1:0.5\n");
    write(&fix.join("nan.libsvm"), "+1 1:nan\n");

    let mut table = String::from("f,a,b,label\n");
    for i in 0..60 {
        let label = if (i * 7) % 3 == 0 { 1 } else { -1 };
        table.push_str(&format!(
            "{},{},{},{label}\n",
            (i % 10) as f64 + 0.5,
            i % 2,
            (i / 2) % 2
        ));
    }
    write(&fix.join("table.csv"), &table);
    write(&fix.join("semicolons.csv"), &table.replace(',', ";"));
    write(&fix.join("ragged.csv"), "f,g\n1,2\nSmith, J,3\n");
    write(&fix.join("open_quote.csv"), "f,g\n1,2\n\"3,4\n5,6\n");
    write(
        &fix.join("table_nan.csv"),
        &table.replacen("0.5,0,0", "NaN,0,0", 1),
    );
    let inf: Vec<String> = table
        .lines()
        .enumerate()
        .map(|(i, l)| match (i, l.find(',')) {
            (3, Some(k)) => format!("inf{}", &l[k..]),
            _ => l.to_string(),
        })
        .collect();
    write(&fix.join("table_inf.csv"), &(inf.join("\n") + "\n"));
    // A bad cell past the first block a release reads (65,536 rows): named at its row.
    let mut long = String::from("f,g\n");
    for i in 0..70_000 {
        long.push_str(if i == 69_999 { "x7,1\n" } else { "1.5,1\n" });
    }
    write(&fix.join("long_bad.csv"), &long);

    let series: String = std::iter::once("value".to_string())
        .chain((0..100).map(|i| ((i * 5) % 3 % 2).to_string()))
        .collect::<Vec<_>>()
        .join("\n");
    write(&fix.join("series.csv"), &format!("{series}\n"));
    write(&fix.join("series_nan.csv"), "value\n1\nnan\n0\n");
    write(&fix.join("series_neg.csv"), "value\n1\n-2\n");
    write(&fix.join("bad_bits.txt"), "0110\n012\n");
    write(
        &fix.join("events.csv"),
        "date,delay\n2020-01-01T00:00,3\n1970-01-01T00:00,20\n2020-01-02T00:00,15\n",
    );

    write(
        &fix.join("events_sorted.csv"),
        "date,delay\n2020-01-01T00:00,3\n2020-01-02T00:00,15\n",
    );
}

/// Two key pairs and python-paillier numbers under the first.
fn key_fixtures(fix: &Path) {
    for dir in ["keys", "keys2"] {
        let args = [
            "keys",
            "generate",
            "--bits",
            "1024",
            "--allow-insecure-test-keys",
        ];
        ok(fix, &[&args[..], &["--out", dir]].concat());
    }
    let ct = ok(
        fix,
        &[
            "keys",
            "encrypt",
            "--allow-insecure-test-keys",
            "--public",
            "keys/public.json",
            "1.5",
        ],
    );
    write(&fix.join("ct.json"), &ct);
    write(
        &fix.join("ct_exponent.json"),
        &ct.replace("\"e\":-8", "\"e\":-1000000000"),
    );
    write(&fix.join("ct_text.json"), "{\"e\":-8,\"v\":\"twelve\"}");
    let foreign = ok(
        fix,
        &[
            "keys",
            "encrypt",
            "--allow-insecure-test-keys",
            "--public",
            "keys2/public.json",
            "1.5",
        ],
    );
    write(&fix.join("ct_foreign.json"), &foreign);
    // v = 2^2100, past n^2 for a 1024-bit n.
    let mut big = String::from("1");
    for _ in 0..633 {
        big.push('0');
    }
    write(
        &fix.join("ct_range.json"),
        &format!("{{\"e\":-8,\"v\":\"{big}\"}}"),
    );
}

/// The message a user sees: stderr, with the fixture and work paths made generic.
fn message(stderr: &str, fix: &Path, work: &Path) -> String {
    stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join(" / ")
        .replace(&fix.display().to_string(), "FIX")
        .replace(&work.display().to_string(), "WORK")
        .split(' ')
        .map(|w| {
            // Key fingerprints differ per run (the fixtures' keys come from the OS).
            let hex = w.trim_end_matches([',', ')']);
            if hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                w.replacen(hex, "<fingerprint>", 1)
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn every_bad_input_fails_clearly_and_leaves_nothing() {
    let root = tempfile::tempdir().expect("tmp");
    let fix = root.path().join("fix");
    std::fs::create_dir(&fix).expect("mkdir");
    fixtures(&fix);
    let fixtures_before = snapshot(&fix);
    let cases = cases();
    assert!(cases.len() >= 60, "the table covers at least 60 cases");
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let work = root.path().join(format!("work-{i}"));
        std::fs::create_dir(&work).expect("mkdir");
        for (p, text) in &c.before {
            write(&work.join(p), text);
        }
        let before = snapshot(&work);
        let args: Vec<String> = c
            .args
            .iter()
            .map(|a| {
                a.replace("FIX/", &format!("{}/", fix.display()))
                    .replace("WORK/", &format!("{}/", work.display()))
            })
            .collect();
        let o = kinsey(&work, &args);
        let msg = message(&String::from_utf8_lossy(&o.stderr), &fix, &work);
        let code = o.status.code().map_or("signal".into(), |c| c.to_string());
        if o.status.success() {
            failures.push(format!("#{} {}: exit 0", i + 1, c.what));
        }
        for w in &c.expect {
            if !msg.contains(w.as_str()) {
                failures.push(format!("#{} {}: message lacks {w:?}: {msg}", i + 1, c.what));
            }
        }
        if !msg.contains("error") {
            failures.push(format!("#{} {}: no error line: {msg}", i + 1, c.what));
        }
        if snapshot(&work) != before {
            failures.push(format!(
                "#{} {}: left files behind: {:?}",
                i + 1,
                c.what,
                snapshot(&work).keys().collect::<Vec<_>>()
            ));
        }
        if snapshot(&fix) != fixtures_before {
            failures.push(format!("#{} {}: changed the fixtures", i + 1, c.what));
        }
        rows.push(format!(
            "| {} | `kinsey {}` | {} | {} | {} |",
            i + 1,
            c.args.join(" ").replace('|', "\\|"),
            c.what,
            code,
            msg.replace('|', "\\|")
        ));
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    let table = format!(
        "# Bad inputs\n\n\
         Generated by `engine/cli/tests/bad_inputs.rs` (`cargo test -p kinsey-cli --test bad_inputs`),\n\
         which runs every case through the `kinsey` binary and checks that it exits non-zero, that\n\
         the message contains the words that name the problem, and that neither the working\n\
         directory nor the inputs changed (no file left behind). `FIX/` is the directory of\n\
         fixtures the test builds, `WORK/` the case's own working directory. Do not edit by hand:\n\
         run the test with `KINSEY_BLESS=1` after changing a message.\n\n\
         | # | command | bad input | exit | message |\n|---|---|---|---|---|\n{}\n",
        rows.join("\n")
    );
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/bad-inputs.md");
    if std::env::var_os("KINSEY_BLESS").is_some() {
        std::fs::write(&doc, &table).expect("write the table");
    } else {
        let committed = std::fs::read_to_string(&doc).unwrap_or_default();
        assert!(
            committed == table,
            "docs/bad-inputs.md differs from what the cases print: run `KINSEY_BLESS=1 cargo test -p kinsey-cli --test bad_inputs` and commit the table"
        );
    }
}
