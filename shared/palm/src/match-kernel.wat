;; palmid 1:1 palm-code matcher, WebAssembly SIMD kernel.
;;
;; Computes exactly what `packedDistanceJs` in match.ts computes (range 4): a coarse global shift
;; search (dx, dy in {-4,-2,0,2,4}, even rows only), then 4 x 4 tiles of 8 x 8 cells, each taking
;; its best shift within +-2 of the global one, plus the smoothness penalty (TILE_SMOOTHNESS,
;; 0.02 per cell of mean disagreement between neighbouring tiles' shifts, `shiftDisagreement`),
;; the tile distance rescaled by the share of the tiles' overlap area that both masks trust.
;; Same integer counts, same tie-breaking (first strictly better in dy-major order), same f64
;; formulas, so the result is bit-identical.
;;
;; Build: `tsx shared/palm/scripts/build-match-kernel.ts` (wabt) writes match-kernel.wasm.ts.
;;
;; The packed input (match.ts) is row-major: 32 rows of 8 u32 words (mask, 6 code planes, pad).
;; The kernel transposes it to plane-major, so one v128 holds the same plane of 4 consecutive
;; rows: a translation by dy is then an address offset into zero-padded planes, a translation by
;; dx one lane shift for 4 rows, and i8x16.popcnt yields per-(row, 8-column tile) counts.
;;
;; Memory map (bytes), one 64 KiB page; padding rows are never written and stay zero:
;;      0  IN_A       probe, packed (256 words)
;;   1024  IN_B       candidate, packed (256 words)
;;   2048  A_FULL     probe, plane-major: plane p row r at 2048 + p*128 + r*4
;;   3072  A_EVEN     probe, even rows only: plane p row 2i at 3072 + p*64 + i*4
;;   4096  B_FULL     candidate, plane-major, stride 128
;;   5120  B_EVEN     candidate, even rows, stride 64
;;   6144  B_EVEN_SH  5 versions (dx = -4,-2,0,2,4) x 7 planes x 24 rows (4 zero rows each side):
;;                    version v plane p even row i at 6144 + v*672 + p*96 + (i+4)*4
;;  10240  B_TILE_SH  5 versions (dx = gx-2 .. gx+2) x 7 planes x 48 rows (8 zero rows each side):
;;                    version u plane p row r at 10240 + u*1344 + p*192 + (r+8)*4
;;  17408  BEST_BITS  per tile best mismatch count, i32 x 16 (tile = band*4 + column byte)
;;  17472  BEST_N     per tile best overlap count, i32 x 16 (0 = no valid shift yet)
;;  17536  SCRATCH    written only, as a scheduling barrier
;;  17552  BEST_SHIFT per tile best shift, i32 x 16: (dx - gx + 2) + 8 (dy - gy + 2); read only
;;                    for tiles with BEST_N > 0
(module
  (memory (export "memory") 1)

  ;; ---- transposition: packed rows -> plane-major (full and even rows) ------------------------
  ;; src: packed template; full: plane-major destination (stride 128); even: even rows (stride 64).
  ;; Four rows at a time: two 4 x 4 word transposes (words 0-3 and 4-7 of each row, pad dropped).
  (func $transpose (param $src i32) (param $full i32) (param $even i32)
    (local $s i32) (local $d i32) (local $end i32) (local $t0 v128) (local $t1 v128) (local $t2 v128) (local $t3 v128)
    (local.set $s (local.get $src))
    (local.set $d (local.get $full))
    (local.set $end (i32.add (local.get $src) (i32.const 1024)))
    (loop $rows
      (local.set $t0 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (v128.load offset=0 (local.get $s)) (v128.load offset=32 (local.get $s))))
      (local.set $t1 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (v128.load offset=64 (local.get $s)) (v128.load offset=96 (local.get $s))))
      (local.set $t2 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (v128.load offset=0 (local.get $s)) (v128.load offset=32 (local.get $s))))
      (local.set $t3 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (v128.load offset=64 (local.get $s)) (v128.load offset=96 (local.get $s))))
      (v128.store offset=0 (local.get $d) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $t0) (local.get $t1)))
      (v128.store offset=128 (local.get $d) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $t0) (local.get $t1)))
      (v128.store offset=256 (local.get $d) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $t2) (local.get $t3)))
      (v128.store offset=384 (local.get $d) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $t2) (local.get $t3)))
      (local.set $t0 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (v128.load offset=16 (local.get $s)) (v128.load offset=48 (local.get $s))))
      (local.set $t1 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (v128.load offset=80 (local.get $s)) (v128.load offset=112 (local.get $s))))
      (local.set $t2 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (v128.load offset=16 (local.get $s)) (v128.load offset=48 (local.get $s))))
      (local.set $t3 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (v128.load offset=80 (local.get $s)) (v128.load offset=112 (local.get $s))))
      (v128.store offset=512 (local.get $d) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $t0) (local.get $t1)))
      (v128.store offset=640 (local.get $d) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $t0) (local.get $t1)))
      (v128.store offset=768 (local.get $d) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $t2) (local.get $t3)))
      (local.set $s (i32.add (local.get $s) (i32.const 128)))
      (local.set $d (i32.add (local.get $d) (i32.const 16)))
      (br_if $rows (i32.lt_u (local.get $s) (local.get $end))))
    ;; even rows: lanes 0 and 2 of two consecutive row-vectors
    (local.set $s (local.get $full))
    (local.set $d (local.get $even))
    (local.set $end (i32.add (local.get $full) (i32.const 128)))
    (loop $evens
      (v128.store offset=0 (local.get $d) (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (v128.load offset=0 (local.get $s)) (v128.load offset=16 (local.get $s))))
      (v128.store offset=64 (local.get $d) (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (v128.load offset=128 (local.get $s)) (v128.load offset=144 (local.get $s))))
      (v128.store offset=128 (local.get $d) (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (v128.load offset=256 (local.get $s)) (v128.load offset=272 (local.get $s))))
      (v128.store offset=192 (local.get $d) (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (v128.load offset=384 (local.get $s)) (v128.load offset=400 (local.get $s))))
      (v128.store offset=256 (local.get $d) (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (v128.load offset=512 (local.get $s)) (v128.load offset=528 (local.get $s))))
      (v128.store offset=320 (local.get $d) (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (v128.load offset=640 (local.get $s)) (v128.load offset=656 (local.get $s))))
      (v128.store offset=384 (local.get $d) (i8x16.shuffle 0 1 2 3 8 9 10 11 16 17 18 19 24 25 26 27 (v128.load offset=768 (local.get $s)) (v128.load offset=784 (local.get $s))))
      (local.set $s (i32.add (local.get $s) (i32.const 32)))
      (local.set $d (i32.add (local.get $d) (i32.const 16)))
      (br_if $evens (i32.lt_u (local.get $s) (local.get $end))))
  )

  ;; ---- column shift: dst = src >>> dx (dx >= 0) or src << -dx, 7 planes of `vecs` row-vectors ----
  ;; (vecs a multiple of 4)
  (func $shift (param $src i32) (param $srcStride i32) (param $dst i32) (param $dstStride i32)
    (param $vecs i32) (param $dx i32)
    (local $p i32) (local $s i32) (local $d i32) (local $end i32) (local $c i32)
    (local.set $c (select (local.get $dx) (i32.sub (i32.const 0) (local.get $dx))
      (i32.ge_s (local.get $dx) (i32.const 0))))
    (local.set $p (i32.const 0))
    (loop $planes
      (local.set $s (i32.add (local.get $src) (i32.mul (local.get $p) (local.get $srcStride))))
      (local.set $d (i32.add (local.get $dst) (i32.mul (local.get $p) (local.get $dstStride))))
      (local.set $end (i32.add (local.get $s) (i32.shl (local.get $vecs) (i32.const 4))))
      (if (i32.ge_s (local.get $dx) (i32.const 0))
        (then
          (loop $right
            (v128.store offset=0 (local.get $d) (i32x4.shr_u (v128.load offset=0 (local.get $s)) (local.get $c)))
            (v128.store offset=16 (local.get $d) (i32x4.shr_u (v128.load offset=16 (local.get $s)) (local.get $c)))
            (v128.store offset=32 (local.get $d) (i32x4.shr_u (v128.load offset=32 (local.get $s)) (local.get $c)))
            (v128.store offset=48 (local.get $d) (i32x4.shr_u (v128.load offset=48 (local.get $s)) (local.get $c)))
            (local.set $s (i32.add (local.get $s) (i32.const 64)))
            (local.set $d (i32.add (local.get $d) (i32.const 64)))
            (br_if $right (i32.lt_u (local.get $s) (local.get $end)))))
        (else
          (loop $left
            (v128.store offset=0 (local.get $d) (i32x4.shl (v128.load offset=0 (local.get $s)) (local.get $c)))
            (v128.store offset=16 (local.get $d) (i32x4.shl (v128.load offset=16 (local.get $s)) (local.get $c)))
            (v128.store offset=32 (local.get $d) (i32x4.shl (v128.load offset=32 (local.get $s)) (local.get $c)))
            (v128.store offset=48 (local.get $d) (i32x4.shl (v128.load offset=48 (local.get $s)) (local.get $c)))
            (local.set $s (i32.add (local.get $s) (i32.const 64)))
            (local.set $d (i32.add (local.get $d) (i32.const 64)))
            (br_if $left (i32.lt_u (local.get $s) (local.get $end))))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br_if $planes (i32.lt_u (local.get $p) (i32.const 7))))
  )

  ;; ---- coarse global shift: returns (dx + 4) | (dy + 4) << 8 of the first best shift ----------
  (func $coarse (result i32)
    (local $dy i32) (local $dx i32) (local $base i32) (local $j i32) (local $pa i32) (local $pb i32)
    (local $m v128) (local $cn i32) (local $cs i32)
    (local $w1 i64) (local $w2 i64) (local $w4 i64) (local $wn i64)
    (local $x v128) (local $y v128) (local $z v128) (local $q v128) (local $s1 v128) (local $s2 v128)
    (local $c1 v128) (local $c2 v128) (local $c3 v128)
    (local $d f64) (local $best f64) (local $bx i32) (local $by i32)
    ;; shifted even-row copies of the candidate for dx = -4, -2, 0, 2, 4
    (local.set $dx (i32.const -4))
    (loop $versions
      (call $shift (i32.const 5120) (i32.const 64)
        (i32.add (i32.const 6160) (i32.mul (i32.add (local.get $dx) (i32.const 4)) (i32.const 336)))
        (i32.const 96) (i32.const 4) (local.get $dx))
      (local.set $dx (i32.add (local.get $dx) (i32.const 2)))
      (br_if $versions (i32.le_s (local.get $dx) (i32.const 4))))
    (local.set $best (f64.const inf))
    (local.set $bx (i32.const 0))
    (local.set $by (i32.const 0))
    (local.set $dy (i32.const -4))
    (loop $dys
      (local.set $dx (i32.const -4))
      (loop $dxs
        ;; b even row i + dy/2 of version (dx + 4) / 2
        (local.set $base (i32.add
          (i32.add (i32.const 6144) (i32.mul (i32.add (local.get $dx) (i32.const 4)) (i32.const 336)))
          (i32.shl (i32.add (local.get $dy) (i32.const 8)) (i32.const 1))))
        (local.set $w1 (i64.const 0))
        (local.set $w2 (i64.const 0))
        (local.set $w4 (i64.const 0))
        (local.set $wn (i64.const 0))
        (local.set $pa (i32.const 3072))
        (local.set $pb (local.get $base))
        (local.set $j (i32.const 0))
        ;; 4 row-vectors = 16 even rows
        (loop $vecs
          (local.set $m (v128.and (v128.load (local.get $pa)) (v128.load (local.get $pb))))
          ;; the six XOR planes summed bit-sliced with carry-save adders (full adder: sum = x^y^z,
          ;; carry = majority): count = ones + 2 twos + 4 fours, masked by m, three popcounts not six
          (local.set $x (v128.xor (v128.load offset=64 (local.get $pa)) (v128.load offset=96 (local.get $pb))))
          (local.set $y (v128.xor (v128.load offset=128 (local.get $pa)) (v128.load offset=192 (local.get $pb))))
          (local.set $z (v128.xor (v128.load offset=192 (local.get $pa)) (v128.load offset=288 (local.get $pb))))
          (local.set $q (v128.xor (local.get $x) (local.get $y)))
          (local.set $s1 (v128.xor (local.get $q) (local.get $z)))
          (local.set $c1 (v128.bitselect (local.get $z) (local.get $x) (local.get $q)))
          (v128.store (i32.const 17536) (local.get $c1)) ;; scheduling barrier, as in $tiles
          (local.set $x (v128.xor (v128.load offset=256 (local.get $pa)) (v128.load offset=384 (local.get $pb))))
          (local.set $y (v128.xor (v128.load offset=320 (local.get $pa)) (v128.load offset=480 (local.get $pb))))
          (local.set $z (v128.xor (v128.load offset=384 (local.get $pa)) (v128.load offset=576 (local.get $pb))))
          (local.set $q (v128.xor (local.get $x) (local.get $y)))
          (local.set $s2 (v128.xor (local.get $q) (local.get $z)))
          (local.set $c2 (v128.bitselect (local.get $z) (local.get $x) (local.get $q)))
          (local.set $c3 (v128.and (local.get $s1) (local.get $s2)))
          (local.set $s1 (v128.xor (local.get $s1) (local.get $s2)))
          (local.set $q (v128.xor (local.get $c1) (local.get $c2)))
          (local.set $s2 (v128.xor (local.get $q) (local.get $c3)))
          (local.set $c1 (v128.bitselect (local.get $c3) (local.get $c1) (local.get $q)))
          ;; only totals matter here: scalar 64-bit popcounts are cheaper than byte-lane ones
          (local.set $x (v128.and (local.get $s1) (local.get $m)))
          (local.set $y (v128.and (local.get $s2) (local.get $m)))
          (local.set $z (v128.and (local.get $c1) (local.get $m)))
          (local.set $wn (i64.add (local.get $wn) (i64.add
            (i64.popcnt (i64x2.extract_lane 0 (local.get $m))) (i64.popcnt (i64x2.extract_lane 1 (local.get $m))))))
          (local.set $w1 (i64.add (local.get $w1) (i64.add
            (i64.popcnt (i64x2.extract_lane 0 (local.get $x))) (i64.popcnt (i64x2.extract_lane 1 (local.get $x))))))
          (local.set $w2 (i64.add (local.get $w2) (i64.add
            (i64.popcnt (i64x2.extract_lane 0 (local.get $y))) (i64.popcnt (i64x2.extract_lane 1 (local.get $y))))))
          (local.set $w4 (i64.add (local.get $w4) (i64.add
            (i64.popcnt (i64x2.extract_lane 0 (local.get $z))) (i64.popcnt (i64x2.extract_lane 1 (local.get $z))))))
          (local.set $pa (i32.add (local.get $pa) (i32.const 16)))
          (local.set $pb (i32.add (local.get $pb) (i32.const 16)))
          (local.set $j (i32.add (local.get $j) (i32.const 1)))
          (br_if $vecs (i32.lt_u (local.get $j) (i32.const 4))))
        (local.set $cn (i32.wrap_i64 (local.get $wn)))
        ;; fewer than MIN_OVERLAP / 2 points: NaN in the reference, never better
        (if (i32.ge_u (local.get $cn) (i32.const 80))
          (then
            (local.set $cs (i32.wrap_i64 (i64.add (local.get $w1)
              (i64.shl (i64.add (local.get $w2) (i64.shl (local.get $w4) (i64.const 1))) (i64.const 1)))))
            (local.set $d (f64.div (f64.convert_i32_u (local.get $cs))
              (f64.convert_i32_u (i32.mul (local.get $cn) (i32.const 6)))))
            (local.set $d (f64.sub (f64.const 0.5) (f64.mul (f64.sub (f64.const 0.5) (local.get $d))
              (f64.sqrt (f64.min (f64.const 1)
                (f64.div (f64.convert_i32_u (i32.shl (local.get $cn) (i32.const 1))) (f64.const 560)))))))
            (if (f64.lt (local.get $d) (local.get $best))
              (then
                (local.set $best (local.get $d))
                (local.set $bx (local.get $dx))
                (local.set $by (local.get $dy))))))
        (local.set $dx (i32.add (local.get $dx) (i32.const 2)))
        (br_if $dxs (i32.le_s (local.get $dx) (i32.const 4))))
      (local.set $dy (i32.add (local.get $dy) (i32.const 2)))
      (br_if $dys (i32.le_s (local.get $dy) (i32.const 4))))
    (i32.or (i32.add (local.get $bx) (i32.const 4))
      (i32.shl (i32.add (local.get $by) (i32.const 4)) (i32.const 8)))
  )

  ;; ---- tile-wise refinement around (gx, gy); returns the final distance ------------------------
  (func $tiles (param $gx i32) (param $gy i32) (result f64)
    (local $u i32) (local $dy i32) (local $dx i32) (local $pa i32) (local $pb i32) (local $t i32)
    (local $m v128) (local $n v128) (local $s v128) (local $nv v128) (local $sv v128)
    (local $x v128) (local $y v128) (local $z v128) (local $q v128) (local $s1 v128) (local $s2 v128)
    (local $c1 v128) (local $c2 v128) (local $c3 v128)
    (local $bb v128) (local $bn v128) (local $better v128) (local $bits i32) (local $cn i32)
    (local $d f64) (local $sc v128) (local $pen i32) (local $edges i32) (local $c i32) (local $area i32)
    ;; shifted full copies of the candidate for dx = gx - 2 + u
    (local.set $u (i32.const 0))
    (loop $versions
      (call $shift (i32.const 4096) (i32.const 128)
        (i32.add (i32.const 10272) (i32.mul (local.get $u) (i32.const 1344)))
        (i32.const 192) (i32.const 8) (i32.add (local.get $gx) (i32.sub (local.get $u) (i32.const 2))))
      (local.set $u (i32.add (local.get $u) (i32.const 1)))
      (br_if $versions (i32.lt_u (local.get $u) (i32.const 5))))
    ;; no valid shift yet: bits 1 / n 0 compares as +infinity (bits * bestN < bestBits * n)
    (v128.store (i32.const 17408) (v128.const i32x4 1 1 1 1))
    (v128.store (i32.const 17424) (v128.const i32x4 1 1 1 1))
    (v128.store (i32.const 17440) (v128.const i32x4 1 1 1 1))
    (v128.store (i32.const 17456) (v128.const i32x4 1 1 1 1))
    (v128.store (i32.const 17472) (v128.const i32x4 0 0 0 0))
    (v128.store (i32.const 17488) (v128.const i32x4 0 0 0 0))
    (v128.store (i32.const 17504) (v128.const i32x4 0 0 0 0))
    (v128.store (i32.const 17520) (v128.const i32x4 0 0 0 0))
    (local.set $dy (i32.sub (local.get $gy) (i32.const 2)))
    (loop $dys
      (local.set $u (i32.const 0))
      (loop $dxs
        (local.set $sc (i32x4.splat (i32.add (local.get $u)
          (i32.shl (i32.sub (local.get $dy) (i32.sub (local.get $gy) (i32.const 2))) (i32.const 3)))))
        (local.set $pa (i32.const 2048))
        (local.set $pb (i32.add (i32.add (i32.const 10240) (i32.mul (local.get $u) (i32.const 1344)))
          (i32.shl (i32.add (local.get $dy) (i32.const 8)) (i32.const 2))))
        (local.set $t (i32.const 0))
        ;; one band = 8 rows = two row-vectors; byte sums stay <= 2 * 48 = 96
        (loop $bands
          (local.set $m (v128.and (v128.load (local.get $pa)) (v128.load (local.get $pb))))
          (local.set $n (i8x16.popcnt (local.get $m)))
          ;; the six XOR planes summed bit-sliced with carry-save adders (full adder: sum = x^y^z,
          ;; carry = majority): count = ones + 2 twos + 4 fours, masked by m, three popcounts not six
          (local.set $x (v128.xor (v128.load offset=128 (local.get $pa)) (v128.load offset=192 (local.get $pb))))
          (local.set $y (v128.xor (v128.load offset=256 (local.get $pa)) (v128.load offset=384 (local.get $pb))))
          (local.set $z (v128.xor (v128.load offset=384 (local.get $pa)) (v128.load offset=576 (local.get $pb))))
          (local.set $q (v128.xor (local.get $x) (local.get $y)))
          (local.set $s1 (v128.xor (local.get $q) (local.get $z)))
          (local.set $c1 (v128.bitselect (local.get $z) (local.get $x) (local.get $q)))
          (local.set $x (v128.xor (v128.load offset=512 (local.get $pa)) (v128.load offset=768 (local.get $pb))))
          (local.set $y (v128.xor (v128.load offset=640 (local.get $pa)) (v128.load offset=960 (local.get $pb))))
          (local.set $z (v128.xor (v128.load offset=768 (local.get $pa)) (v128.load offset=1152 (local.get $pb))))
          (local.set $q (v128.xor (local.get $x) (local.get $y)))
          (local.set $s2 (v128.xor (local.get $q) (local.get $z)))
          (local.set $c2 (v128.bitselect (local.get $z) (local.get $x) (local.get $q)))
          (local.set $c3 (v128.and (local.get $s1) (local.get $s2)))
          (local.set $s1 (v128.xor (local.get $s1) (local.get $s2)))
          (local.set $q (v128.xor (local.get $c1) (local.get $c2)))
          (local.set $s2 (v128.xor (local.get $q) (local.get $c3)))
          (local.set $c1 (v128.bitselect (local.get $c3) (local.get $c1) (local.get $q)))
          (local.set $x (i8x16.popcnt (v128.and (local.get $c1) (local.get $m))))
          (local.set $x (i8x16.add (i8x16.add (local.get $x) (local.get $x)) (i8x16.popcnt (v128.and (local.get $s2) (local.get $m)))))
          (local.set $s (i8x16.add (i8x16.add (local.get $x) (local.get $x)) (i8x16.popcnt (v128.and (local.get $s1) (local.get $m)))))
          ;; a store between the two row-vectors keeps the engine from hoisting all 28 loads
          ;; above the arithmetic (register spills); the scratch slot is never read
          (v128.store (i32.const 17536) (local.get $s))
          (local.set $m (v128.and (v128.load offset=16 (local.get $pa)) (v128.load offset=16 (local.get $pb))))
          (local.set $n (i8x16.add (local.get $n) (i8x16.popcnt (local.get $m))))
          (local.set $x (v128.xor (v128.load offset=144 (local.get $pa)) (v128.load offset=208 (local.get $pb))))
          (local.set $y (v128.xor (v128.load offset=272 (local.get $pa)) (v128.load offset=400 (local.get $pb))))
          (local.set $z (v128.xor (v128.load offset=400 (local.get $pa)) (v128.load offset=592 (local.get $pb))))
          (local.set $q (v128.xor (local.get $x) (local.get $y)))
          (local.set $s1 (v128.xor (local.get $q) (local.get $z)))
          (local.set $c1 (v128.bitselect (local.get $z) (local.get $x) (local.get $q)))
          (local.set $x (v128.xor (v128.load offset=528 (local.get $pa)) (v128.load offset=784 (local.get $pb))))
          (local.set $y (v128.xor (v128.load offset=656 (local.get $pa)) (v128.load offset=976 (local.get $pb))))
          (local.set $z (v128.xor (v128.load offset=784 (local.get $pa)) (v128.load offset=1168 (local.get $pb))))
          (local.set $q (v128.xor (local.get $x) (local.get $y)))
          (local.set $s2 (v128.xor (local.get $q) (local.get $z)))
          (local.set $c2 (v128.bitselect (local.get $z) (local.get $x) (local.get $q)))
          (local.set $c3 (v128.and (local.get $s1) (local.get $s2)))
          (local.set $s1 (v128.xor (local.get $s1) (local.get $s2)))
          (local.set $q (v128.xor (local.get $c1) (local.get $c2)))
          (local.set $s2 (v128.xor (local.get $q) (local.get $c3)))
          (local.set $c1 (v128.bitselect (local.get $c3) (local.get $c1) (local.get $q)))
          (local.set $x (i8x16.popcnt (v128.and (local.get $c1) (local.get $m))))
          (local.set $x (i8x16.add (i8x16.add (local.get $x) (local.get $x)) (i8x16.popcnt (v128.and (local.get $s2) (local.get $m)))))
          (local.set $s (i8x16.add (local.get $s) (i8x16.add (i8x16.add (local.get $x) (local.get $x)) (i8x16.popcnt (v128.and (local.get $s1) (local.get $m))))))
          ;; per column byte over the 4 rows of each lane: transpose bytes, then widen-add pairs
          (local.set $nv (i32x4.dot_i16x8_s
            (i16x8.extadd_pairwise_i8x16_u
              (i8x16.shuffle 0 4 8 12 1 5 9 13 2 6 10 14 3 7 11 15 (local.get $n) (local.get $n)))
            (v128.const i16x8 1 1 1 1 1 1 1 1)))
          (local.set $sv (i32x4.dot_i16x8_s
            (i16x8.extadd_pairwise_i8x16_u
              (i8x16.shuffle 0 4 8 12 1 5 9 13 2 6 10 14 3 7 11 15 (local.get $s) (local.get $s)))
            (v128.const i16x8 1 1 1 1 1 1 1 1)))
          ;; better iff n >= 8 and bits / n < bestBits / bestN (exact: small integers)
          (local.set $bb (v128.load offset=17408 (local.get $t)))
          (local.set $bn (v128.load offset=17472 (local.get $t)))
          (local.set $better (v128.and
            (i32x4.gt_s (local.get $nv) (v128.const i32x4 7 7 7 7))
            (i32x4.lt_s (i32x4.mul (local.get $sv) (local.get $bn)) (i32x4.mul (local.get $bb) (local.get $nv)))))
          (v128.store offset=17408 (local.get $t) (v128.bitselect (local.get $sv) (local.get $bb) (local.get $better)))
          (v128.store offset=17472 (local.get $t) (v128.bitselect (local.get $nv) (local.get $bn) (local.get $better)))
          (v128.store offset=17552 (local.get $t)
            (v128.bitselect (local.get $sc) (v128.load offset=17552 (local.get $t)) (local.get $better)))
          (local.set $pa (i32.add (local.get $pa) (i32.const 32)))
          (local.set $pb (i32.add (local.get $pb) (i32.const 32)))
          (local.set $t (i32.add (local.get $t) (i32.const 16)))
          (br_if $bands (i32.lt_u (local.get $t) (i32.const 64))))
        (local.set $u (i32.add (local.get $u) (i32.const 1)))
        (br_if $dxs (i32.lt_u (local.get $u) (i32.const 5))))
      (local.set $dy (i32.add (local.get $dy) (i32.const 1)))
      (br_if $dys (i32.le_s (local.get $dy) (i32.add (local.get $gy) (i32.const 2)))))
    ;; sum the best counts; tiles without a valid shift add nothing
    (local.set $bits (i32.const 0))
    (local.set $cn (i32.const 0))
    (local.set $t (i32.const 0))
    (loop $sum
      (local.set $bn (v128.load offset=17472 (local.get $t)))
      (local.set $bb (v128.and (v128.load offset=17408 (local.get $t))
        (v128.not (i32x4.eq (local.get $bn) (v128.const i32x4 0 0 0 0)))))
      (local.set $bits (i32.add (local.get $bits) (i32.add
        (i32.add (i32x4.extract_lane 0 (local.get $bb)) (i32x4.extract_lane 1 (local.get $bb)))
        (i32.add (i32x4.extract_lane 2 (local.get $bb)) (i32x4.extract_lane 3 (local.get $bb))))))
      (local.set $cn (i32.add (local.get $cn) (i32.add
        (i32.add (i32x4.extract_lane 0 (local.get $bn)) (i32x4.extract_lane 1 (local.get $bn)))
        (i32.add (i32x4.extract_lane 2 (local.get $bn)) (i32x4.extract_lane 3 (local.get $bn))))))
      (local.set $t (i32.add (local.get $t) (i32.const 16)))
      (br_if $sum (i32.lt_u (local.get $t) (i32.const 64))))
    (if (i32.lt_u (local.get $cn) (i32.const 160)) (then (return (f64.const 0.5))))
    ;; smoothness: |dx| + |dy| differences over the edges to the right and lower neighbour tiles,
    ;; both with a valid shift ($t is the byte offset of tile t: 4 t); beside it the tiles'
    ;; overlap area at their chosen shifts (`tileOverlap`), for the rescaling below
    (local.set $pen (i32.const 0))
    (local.set $edges (i32.const 0))
    (local.set $area (i32.const 0))
    (local.set $t (i32.const 0))
    (loop $edge
      (if (i32.load offset=17472 (local.get $t))
        (then
          (local.set $c (i32.load offset=17552 (local.get $t)))
          ;; rows of band t >> 4 (bytes), columns of byte lane (t >> 2) & 3, at the tile's shift
          (local.set $area (i32.add (local.get $area) (i32.mul
            (call $span (i32.shl (i32.shr_u (local.get $t) (i32.const 4)) (i32.const 3))
              (i32.add (local.get $gy) (i32.sub (i32.shr_u (local.get $c) (i32.const 3)) (i32.const 2))))
            (call $span (i32.shl (i32.and (i32.shr_u (local.get $t) (i32.const 2)) (i32.const 3)) (i32.const 3))
              (i32.add (local.get $gx) (i32.sub (i32.and (local.get $c) (i32.const 7)) (i32.const 2)))))))
          (if (i32.ne (i32.and (local.get $t) (i32.const 12)) (i32.const 12))
            (then
              (if (i32.load offset=17476 (local.get $t))
                (then
                  (local.set $pen (i32.add (local.get $pen)
                    (call $shiftGap (local.get $c) (i32.load offset=17556 (local.get $t)))))
                  (local.set $edges (i32.add (local.get $edges) (i32.const 1)))))))
          (if (i32.lt_u (local.get $t) (i32.const 48))
            (then
              (if (i32.load offset=17488 (local.get $t))
                (then
                  (local.set $pen (i32.add (local.get $pen)
                    (call $shiftGap (local.get $c) (i32.load offset=17568 (local.get $t)))))
                  (local.set $edges (i32.add (local.get $edges) (i32.const 1)))))))))
      (local.set $t (i32.add (local.get $t) (i32.const 4)))
      (br_if $edge (i32.lt_u (local.get $t) (i32.const 64))))
    ;; Daugman-style rescaling by the share of the overlap area that both masks trust, the area
    ;; floored at 560 cells (REFERENCE_OVERLAP): a few trusted tiles carry less evidence
    (local.set $d (f64.div (f64.convert_i32_u (local.get $bits))
      (f64.convert_i32_u (i32.mul (local.get $cn) (i32.const 6)))))
    (local.set $d (f64.sub (f64.const 0.5) (f64.mul (f64.sub (f64.const 0.5) (local.get $d))
      (f64.sqrt (f64.min (f64.const 1)
        (f64.div (f64.convert_i32_u (local.get $cn))
          (f64.max (f64.convert_i32_u (local.get $area)) (f64.const 560))))))))
    (if (i32.eqz (local.get $edges)) (then (return (f64.min (f64.const 0.5) (local.get $d)))))
    (f64.min (f64.const 0.5)
      (f64.add (local.get $d) (f64.mul (f64.const 0.02)
        (f64.div (f64.convert_i32_u (local.get $pen)) (f64.convert_i32_u (local.get $edges))))))
  )

  ;; cells of the 8-cell span starting at $lo whose partner at $shift lies in the grid:
  ;; max(0, min(lo + 8, 32 - shift) - max(lo, -shift))
  (func $span (param $lo i32) (param $shift i32) (result i32)
    (local $a i32) (local $b i32)
    (local.set $a (i32.sub (i32.const 32) (local.get $shift)))
    (local.set $a (select (local.get $a) (i32.add (local.get $lo) (i32.const 8))
      (i32.lt_s (local.get $a) (i32.add (local.get $lo) (i32.const 8)))))
    (local.set $b (i32.sub (i32.const 0) (local.get $shift)))
    (local.set $b (select (local.get $b) (local.get $lo) (i32.gt_s (local.get $b) (local.get $lo))))
    (local.set $a (i32.sub (local.get $a) (local.get $b)))
    (select (local.get $a) (i32.const 0) (i32.gt_s (local.get $a) (i32.const 0)))
  )

  ;; |dx_a - dx_b| + |dy_a - dy_b| of two tile shifts coded dx + 8 dy (both 0-4)
  (func $shiftGap (param $a i32) (param $b i32) (result i32)
    (local $x i32) (local $y i32)
    (local.set $x (i32.sub (i32.and (local.get $a) (i32.const 7)) (i32.and (local.get $b) (i32.const 7))))
    (local.set $y (i32.sub (i32.shr_u (local.get $a) (i32.const 3)) (i32.shr_u (local.get $b) (i32.const 3))))
    (i32.add
      (select (local.get $x) (i32.sub (i32.const 0) (local.get $x)) (i32.ge_s (local.get $x) (i32.const 0)))
      (select (local.get $y) (i32.sub (i32.const 0) (local.get $y)) (i32.ge_s (local.get $y) (i32.const 0))))
  )

  ;; probe at IN_A -> A_FULL / A_EVEN (once per probe when matching one probe against many)
  (func (export "prepareA")
    (call $transpose (i32.const 0) (i32.const 2048) (i32.const 3072))
  )

  ;; distance between the prepared probe and the candidate at IN_B
  (func $distanceB (export "distanceB") (result f64)
    (local $g i32)
    (call $transpose (i32.const 1024) (i32.const 4096) (i32.const 5120))
    (local.set $g (call $coarse))
    (call $tiles
      (i32.sub (i32.and (local.get $g) (i32.const 255)) (i32.const 4))
      (i32.sub (i32.shr_u (local.get $g) (i32.const 8)) (i32.const 4)))
  )

  ;; distance between IN_A and IN_B
  (func (export "distance") (result f64)
    (call $transpose (i32.const 0) (i32.const 2048) (i32.const 3072))
    (call $distanceB)
  )
)
