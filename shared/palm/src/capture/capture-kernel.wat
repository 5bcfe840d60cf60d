;; palmid capture path, WebAssembly SIMD kernel (docs/palm-pipeline.md, "Speed of the capture path").
;;
;; Loops of the capture path that JavaScript runs at one element per step:
;;
;; blockAverage  the work-scale image: each output byte the mean of an f x f block of the frame,
;;               rounded half up, floor((2s + f*f) / (2*f*f)). Integer-only, so the bytes equal
;;               the plain block average's (work-scale.ts, blockAverageReference). With `sums`
;;               set, each block's sum as an i32 instead (the vein-contrast patch).
;; lagSums       the periodicity's autocorrelation sums for the row lags 1-5 (capture-checks.ts):
;;               for each row lag, the eleven horizontal lags -5..5 over the interior columns
;;               5 .. pw-6, summed row by row, column by column. One f64x2 lane per lag (lags
;;               2m and 2m+1 share a vector), so every lag is summed with the same products in
;;               the same order as the JavaScript loop: the same doubles, bit for bit.
;; lag0Sums,     the rest of those sums, scalar, each in the JavaScript loop's order: row lag 0
;; edgeSums      (horizontal lags 2-5 over whole rows) and the five columns at each end of a
;;               row for the row lags 1-5.
;; crop          the palm ROI's supersampled bilinear crop, two taps a vector (below).
;; foreground    the work image thresholded: mask, the chamfer's start values and the count;
;; above         the mask alone (the finger scans' tighter levels);
;; handSums      the hand's grey-level sums and counts behind measureFrame's hand measures.
;;
;; Build: `npx tsx shared/palm/scripts/build-capture-kernel.ts` (wabt) writes capture-kernel.wasm.ts.
;; The caller places the data (byte offsets) and grows the memory; every input has 16 readable
;; bytes after its end (vector loads run past the last element into ignored lanes).
(module
  (memory (export "memory") 1)

  ;; src: frame bytes (fw x at least h*f rows); cols: scratch, 2 bytes per column rounded up to
  ;; 16 columns; out: w x h bytes, or with sums != 0 w x h i32. Requires f*255 <= 65535
  ;; (16-bit column sums).
  (func (export "blockAverage")
    (param $src i32) (param $fw i32) (param $f i32) (param $w i32) (param $h i32)
    (param $cols i32) (param $out i32) (param $sums i32)
    (local $y i32) (local $dy i32) (local $row i32) (local $c i32) (local $n i32) (local $v v128)
    (local $p i32) (local $end i32) (local $x i32) (local $s i32)
    (local $area2 i32) (local $area i32) (local $o i32) (local $quads i64) (local $qend i32) (local $lo v128) (local $hi v128)
    (local.set $area (i32.mul (local.get $f) (local.get $f)))
    (local.set $area2 (i32.shl (local.get $area) (i32.const 1)))
    ;; the columns of whole blocks, rounded up to 16
    (local.set $n (i32.and (i32.add (i32.mul (local.get $w) (local.get $f)) (i32.const 15)) (i32.const -16)))
    (local.set $o (local.get $out))
    (local.set $y (i32.const 0))
    (block $done
      (loop $rows
        (br_if $done (i32.ge_u (local.get $y) (local.get $h)))
        ;; the band's f rows summed per column, 16 columns a strip: the sums stay in two vectors
        ;; until the strip's last row, then are stored once
        (local.set $row (i32.add (local.get $src) (i32.mul (i32.mul (local.get $y) (local.get $f)) (local.get $fw))))
        (local.set $c (i32.const 0))
        (loop $strips
          (local.set $p (i32.add (local.get $row) (local.get $c)))
          (local.set $v (v128.load (local.get $p)))
          (local.set $lo (i16x8.extend_low_i8x16_u (local.get $v)))
          (local.set $hi (i16x8.extend_high_i8x16_u (local.get $v)))
          (local.set $dy (i32.const 1))
          (block $banddone
            (loop $band
              (br_if $banddone (i32.ge_u (local.get $dy) (local.get $f)))
              (local.set $p (i32.add (local.get $p) (local.get $fw)))
              (local.set $v (v128.load (local.get $p)))
              (local.set $lo (i16x8.add (local.get $lo) (i16x8.extend_low_i8x16_u (local.get $v))))
              (local.set $hi (i16x8.add (local.get $hi) (i16x8.extend_high_i8x16_u (local.get $v))))
              (local.set $dy (i32.add (local.get $dy) (i32.const 1)))
              (br $band)))
          (local.set $p (i32.add (local.get $cols) (i32.shl (local.get $c) (i32.const 1))))
          (v128.store offset=0 (local.get $p) (local.get $lo))
          (v128.store offset=16 (local.get $p) (local.get $hi))
          (local.set $c (i32.add (local.get $c) (i32.const 16)))
          (br_if $strips (i32.lt_u (local.get $c) (local.get $n))))
        ;; groups of f columns
        (local.set $p (local.get $cols))
        (local.set $x (i32.const 0))
        (block $outdone
          (loop $outs
            (br_if $outdone (i32.ge_u (local.get $x) (local.get $w)))
            (local.set $s (i32.const 0))
            (local.set $end (i32.add (local.get $p) (i32.shl (local.get $f) (i32.const 1))))
            ;; f <= 16: four columns a 64-bit read, added in 16-bit lanes (at most 4 * 16 * 255
            ;; each), the lanes summed by one multiply (their total, at most 16 * 16 * 255, lands
            ;; in the top 16 bits without carries); then the last f mod 4 columns one by one
            (if (i32.le_u (local.get $f) (i32.const 16))
              (then
                (local.set $quads (i64.const 0))
                (local.set $qend (i32.sub (local.get $end) (i32.shl (i32.and (local.get $f) (i32.const 3)) (i32.const 1))))
                (block $quadsdone
                  (loop $quad
                    (br_if $quadsdone (i32.ge_u (local.get $p) (local.get $qend)))
                    (local.set $quads (i64.add (local.get $quads) (i64.load (local.get $p))))
                    (local.set $p (i32.add (local.get $p) (i32.const 8)))
                    (br $quad)))
                (local.set $s (i32.wrap_i64 (i64.shr_u
                  (i64.mul (local.get $quads) (i64.const 0x0001000100010001)) (i64.const 48))))))
            (block $sumdone
              (loop $sum
                (br_if $sumdone (i32.ge_u (local.get $p) (local.get $end)))
                (local.set $s (i32.add (local.get $s) (i32.load16_u (local.get $p))))
                (local.set $p (i32.add (local.get $p) (i32.const 2)))
                (br $sum)))
            (if (local.get $sums)
              (then
                (i32.store (local.get $o) (local.get $s))
                (local.set $o (i32.add (local.get $o) (i32.const 4))))
              (else
                (i32.store8 (local.get $o)
                  (i32.div_u (i32.add (i32.shl (local.get $s) (i32.const 1)) (local.get $area)) (local.get $area2)))
                (local.set $o (i32.add (local.get $o) (i32.const 1)))))
            (local.set $x (i32.add (local.get $x) (i32.const 1)))
            (br $outs)))
        (local.set $y (i32.add (local.get $y) (i32.const 1)))
        (br $rows))))

  ;; res: pw x ph doubles; out: 5 row lags x 12 doubles (lags -5..5 and one ignored lane).
  ;; Requires pw > 10 and ph > 5.
  (func (export "lagSums") (param $res i32) (param $pw i32) (param $ph i32) (param $out i32)
    (local $ly i32) (local $y i32) (local $a v128) (local $r0 i32) (local $b i32) (local $end i32)
    (local $stride i32) (local $s0 v128) (local $s1 v128) (local $s2 v128) (local $s3 v128)
    (local $s4 v128) (local $s5 v128) (local $o i32)
    (local.set $stride (i32.shl (local.get $pw) (i32.const 3)))
    (local.set $ly (i32.const 1))
    (local.set $o (local.get $out))
    (loop $lags
      (local.set $s0 (v128.const f64x2 0 0))
      (local.set $s1 (v128.const f64x2 0 0))
      (local.set $s2 (v128.const f64x2 0 0))
      (local.set $s3 (v128.const f64x2 0 0))
      (local.set $s4 (v128.const f64x2 0 0))
      (local.set $s5 (v128.const f64x2 0 0))
      (local.set $y (i32.const 0))
      (block $rowsdone
        (loop $rows
          (br_if $rowsdone (i32.ge_s (i32.add (local.get $y) (local.get $ly)) (local.get $ph)))
          ;; a: res[y][x] for x from 5; b: res[y + ly][x - 5]
          (local.set $r0 (i32.add (local.get $res) (i32.add (i32.mul (local.get $y) (local.get $stride)) (i32.const 40))))
          (local.set $end (i32.add (local.get $r0) (i32.shl (i32.sub (local.get $pw) (i32.const 10)) (i32.const 3))))
          (local.set $b (i32.add (local.get $res) (i32.mul (i32.add (local.get $y) (local.get $ly)) (local.get $stride))))
          (loop $cols
            (local.set $a (f64x2.splat (f64.load (local.get $r0))))
            (local.set $s0 (f64x2.add (local.get $s0) (f64x2.mul (local.get $a) (v128.load offset=0 (local.get $b)))))
            (local.set $s1 (f64x2.add (local.get $s1) (f64x2.mul (local.get $a) (v128.load offset=16 (local.get $b)))))
            (local.set $s2 (f64x2.add (local.get $s2) (f64x2.mul (local.get $a) (v128.load offset=32 (local.get $b)))))
            (local.set $s3 (f64x2.add (local.get $s3) (f64x2.mul (local.get $a) (v128.load offset=48 (local.get $b)))))
            (local.set $s4 (f64x2.add (local.get $s4) (f64x2.mul (local.get $a) (v128.load offset=64 (local.get $b)))))
            (local.set $s5 (f64x2.add (local.get $s5) (f64x2.mul (local.get $a) (v128.load offset=80 (local.get $b)))))
            (local.set $r0 (i32.add (local.get $r0) (i32.const 8)))
            (local.set $b (i32.add (local.get $b) (i32.const 8)))
            (br_if $cols (i32.lt_u (local.get $r0) (local.get $end))))
          (local.set $y (i32.add (local.get $y) (i32.const 1)))
          (br $rows)))
      (v128.store offset=0 (local.get $o) (local.get $s0))
      (v128.store offset=16 (local.get $o) (local.get $s1))
      (v128.store offset=32 (local.get $o) (local.get $s2))
      (v128.store offset=48 (local.get $o) (local.get $s3))
      (v128.store offset=64 (local.get $o) (local.get $s4))
      (v128.store offset=80 (local.get $o) (local.get $s5))
      (local.set $o (i32.add (local.get $o) (i32.const 96)))
      (local.set $ly (i32.add (local.get $ly) (i32.const 1)))
      (br_if $lags (i32.le_u (local.get $ly) (i32.const 5)))))

  ;; res: pw x ph doubles; out: 4 doubles, the sums for the horizontal lags 2..5 at row lag 0.
  (func (export "lag0Sums") (param $res i32) (param $pw i32) (param $ph i32) (param $out i32)
    (local $lx i32) (local $y i32) (local $i i32) (local $end i32) (local $s f64) (local $off i32)
    (local.set $lx (i32.const 2))
    (loop $lags
      (local.set $s (f64.const 0))
      (local.set $off (i32.shl (local.get $lx) (i32.const 3)))
      (local.set $y (i32.const 0))
      (loop $rows
        (local.set $i (i32.add (local.get $res) (i32.shl (i32.mul (local.get $y) (local.get $pw)) (i32.const 3))))
        (local.set $end (i32.add (local.get $i) (i32.shl (i32.sub (local.get $pw) (local.get $lx)) (i32.const 3))))
        (loop $cols
          (local.set $s (f64.add (local.get $s)
            (f64.mul (f64.load (local.get $i)) (f64.load (i32.add (local.get $i) (local.get $off))))))
          (local.set $i (i32.add (local.get $i) (i32.const 8)))
          (br_if $cols (i32.lt_u (local.get $i) (local.get $end))))
        (local.set $y (i32.add (local.get $y) (i32.const 1)))
        (br_if $rows (i32.lt_s (local.get $y) (local.get $ph))))
      (f64.store (i32.add (local.get $out) (i32.shl (i32.sub (local.get $lx) (i32.const 2)) (i32.const 3))) (local.get $s))
      (local.set $lx (i32.add (local.get $lx) (i32.const 1)))
      (br_if $lags (i32.le_s (local.get $lx) (i32.const 5)))))

  ;; res: pw x ph doubles (pw >= 11); out: 5 row lags x 12 doubles (index lx + 5; one unused):
  ;; per row lag and horizontal lag, the products of the columns 0-4 and pw-5 .. pw-1 whose
  ;; partner column lies inside the row, rows in order, columns in that order.
  (func (export "edgeSums") (param $res i32) (param $pw i32) (param $ph i32) (param $out i32)
    (local $ly i32) (local $lx i32) (local $y i32) (local $x i32) (local $s f64) (local $xe i32)
    (local $r0 i32) (local $r1 i32)
    (local.set $ly (i32.const 1))
    (loop $rowlags
      (local.set $lx (i32.const -5))
      (loop $lags
        (local.set $s (f64.const 0))
        (local.set $y (i32.const 0))
        (block $rowsdone
          (loop $rows
            (br_if $rowsdone (i32.ge_s (i32.add (local.get $y) (local.get $ly)) (local.get $ph)))
            (local.set $r0 (i32.add (local.get $res) (i32.shl (i32.mul (local.get $y) (local.get $pw)) (i32.const 3))))
            (local.set $r1 (i32.add (local.get $res)
              (i32.shl (i32.mul (i32.add (local.get $y) (local.get $ly)) (local.get $pw)) (i32.const 3))))
            ;; x = 0..4, then pw-5 .. pw-1
            (local.set $x (i32.const 0))
            (local.set $xe (i32.const 5))
            (loop $cols
              (if (i32.and
                    (i32.ge_s (i32.add (local.get $x) (local.get $lx)) (i32.const 0))
                    (i32.lt_s (i32.add (local.get $x) (local.get $lx)) (local.get $pw)))
                (then
                  (local.set $s (f64.add (local.get $s)
                    (f64.mul
                      (f64.load (i32.add (local.get $r0) (i32.shl (local.get $x) (i32.const 3))))
                      (f64.load (i32.add (local.get $r1)
                        (i32.shl (i32.add (local.get $x) (local.get $lx)) (i32.const 3)))))))))
              (local.set $x (i32.add (local.get $x) (i32.const 1)))
              (if (i32.eq (local.get $x) (local.get $xe))
                (then
                  (if (i32.eq (local.get $xe) (i32.const 5))
                    (then
                      (local.set $x (i32.sub (local.get $pw) (i32.const 5)))
                      (local.set $xe (local.get $pw))))))
              (br_if $cols (i32.lt_s (local.get $x) (local.get $xe))))
            (local.set $y (i32.add (local.get $y) (i32.const 1)))
            (br $rows)))
        (f64.store
          (i32.add (local.get $out)
            (i32.shl (i32.add (i32.mul (i32.sub (local.get $ly) (i32.const 1)) (i32.const 12))
              (i32.add (local.get $lx) (i32.const 5))) (i32.const 3)))
          (local.get $s))
        (local.set $lx (i32.add (local.get $lx) (i32.const 1)))
        (br_if $lags (i32.le_s (local.get $lx) (i32.const 5))))
      (local.set $ly (i32.add (local.get $ly) (i32.const 1)))
      (br_if $rowlags (i32.le_s (local.get $ly) (i32.const 5)))))

  ;; The palm ROI's 2 x 2 supersampled bilinear crop (hand-roi.ts, cropPalm): 128 x 128 float32
  ;; outputs, each the mean of four taps. The two taps of a sub-row share an f64x2 (lane i = the
  ;; sub-column), and every lane runs the JavaScript loop's operations in its order (coordinates,
  ;; mirror padding, truncation, weights, the bilinear sum), then the four taps are added in the
  ;; loop's order: the same doubles, so the same floats.
  ;; src: frame rows y0 .. (w bytes a row, rows iy and iy + 1 of every tap present); tab: the
  ;; per-sub-column and per-sub-row products urx, ury, vux, vuy, 256 doubles each; out: 128 x 128
  ;; f32. colsInner: the outputs of a row of the ROI in the inner loop, else of a column (the same
  ;; values; only the order of memory reads differs). Requires w, h >= 2 (so ix + 1 < w, iy + 1 < h
  ;; for every tap: px <= w - 1.001).
  (func (export "crop")
    (param $src i32) (param $w i32) (param $y0 i32) (param $tab i32) (param $colsInner i32)
    (param $out i32) (param $cx f64) (param $cy f64) (param $side f64) (param $xMax f64) (param $yMax f64)
    (local $a i32) (local $b i32) (local $r i32) (local $c i32) (local $j i32) (local $s f64)
    (local $x v128) (local $y v128) (local $px v128) (local $py v128) (local $ix v128) (local $iy v128)
    (local $fx v128) (local $fy v128) (local $gx v128) (local $k v128) (local $t v128)
    (local $k0 i32) (local $k1 i32) (local $d1 v128) (local $d2 v128) (local $d3 v128) (local $d4 v128)
    (local $vx f64) (local $vy f64) (local $rowOff i32) (local $m v128)
    (local $cxv v128) (local $cyv v128) (local $sidev v128) (local $xMaxv v128) (local $yMaxv v128)
    (local $zero v128) (local $one v128) (local $x2v v128) (local $y2v v128) (local $wv v128) (local $y0v v128)
    (local.set $cxv (f64x2.splat (local.get $cx)))
    (local.set $cyv (f64x2.splat (local.get $cy)))
    (local.set $sidev (f64x2.splat (local.get $side)))
    (local.set $xMaxv (f64x2.splat (local.get $xMax)))
    (local.set $yMaxv (f64x2.splat (local.get $yMax)))
    (local.set $x2v (f64x2.splat (f64.mul (f64.const 2) (local.get $xMax))))
    (local.set $y2v (f64x2.splat (f64.mul (f64.const 2) (local.get $yMax))))
    (local.set $zero (f64x2.splat (f64.const 0)))
    (local.set $one (f64x2.splat (f64.const 1)))
    (local.set $wv (i32x4.splat (local.get $w)))
    (local.set $y0v (i32x4.splat (local.get $y0)))
    (local.set $a (i32.const 0))
    (loop $outer
      (local.set $b (i32.const 0))
      (loop $inner
        (if (local.get $colsInner)
          (then (local.set $r (local.get $a)) (local.set $c (local.get $b)))
          (else (local.set $r (local.get $b)) (local.set $c (local.get $a))))
        (local.set $s (f64.const 0))
        (local.set $j (i32.const 0))
        (loop $subrows
          ;; vx = vux[2r + j], vy = vuy[2r + j]
          (local.set $rowOff (i32.shl (i32.add (i32.shl (local.get $r) (i32.const 1)) (local.get $j)) (i32.const 3)))
          (local.set $vx (f64.load offset=4096 (i32.add (local.get $tab) (local.get $rowOff))))
          (local.set $vy (f64.load offset=6144 (i32.add (local.get $tab) (local.get $rowOff))))
          ;; x = cx + side * (urx[2c + i] - vx), y likewise, for i = 0, 1
          (local.set $x (f64x2.add (local.get $cxv)
            (f64x2.mul (local.get $sidev)
              (f64x2.sub (v128.load offset=0 (i32.add (local.get $tab) (i32.shl (local.get $c) (i32.const 4))))
                (f64x2.splat (local.get $vx))))))
          (local.set $y (f64x2.add (local.get $cyv)
            (f64x2.mul (local.get $sidev)
              (f64x2.sub (v128.load offset=2048 (i32.add (local.get $tab) (i32.shl (local.get $c) (i32.const 4))))
                (f64x2.splat (local.get $vy))))))
          ;; inside [0, max] as is, else reflect: max(0, min(v < 0 ? -v : v > max ? 2 max - v : v, max))
          (local.set $m (v128.and (f64x2.ge (local.get $x) (local.get $zero))
            (f64x2.le (local.get $x) (local.get $xMaxv))))
          (local.set $px (local.get $x))
          (if (i32.eqz (i64x2.all_true (local.get $m)))
            (then
              (local.set $px (v128.bitselect
                (local.get $x)
                (f64x2.max (local.get $zero)
                  (f64x2.min
                    (v128.bitselect
                      (f64x2.neg (local.get $x))
                      (v128.bitselect
                        (f64x2.sub (local.get $x2v) (local.get $x))
                        (local.get $x)
                        (f64x2.gt (local.get $x) (local.get $xMaxv)))
                      (f64x2.lt (local.get $x) (local.get $zero)))
                    (local.get $xMaxv)))
                (local.get $m)))))
          (local.set $m (v128.and (f64x2.ge (local.get $y) (local.get $zero))
            (f64x2.le (local.get $y) (local.get $yMaxv))))
          (local.set $py (local.get $y))
          (if (i32.eqz (i64x2.all_true (local.get $m)))
            (then
              (local.set $py (v128.bitselect
                (local.get $y)
                (f64x2.max (local.get $zero)
                  (f64x2.min
                    (v128.bitselect
                      (f64x2.neg (local.get $y))
                      (v128.bitselect
                        (f64x2.sub (local.get $y2v) (local.get $y))
                        (local.get $y)
                        (f64x2.gt (local.get $y) (local.get $yMaxv)))
                      (f64x2.lt (local.get $y) (local.get $zero)))
                    (local.get $yMaxv)))
                (local.get $m)))))
          ;; px, py >= 0: truncation is the floor
          (local.set $ix (i32x4.trunc_sat_f64x2_s_zero (local.get $px)))
          (local.set $iy (i32x4.trunc_sat_f64x2_s_zero (local.get $py)))
          (local.set $fx (f64x2.sub (local.get $px) (f64x2.convert_low_i32x4_s (local.get $ix))))
          (local.set $fy (f64x2.sub (local.get $py) (f64x2.convert_low_i32x4_s (local.get $iy))))
          ;; k = (iy - y0) w + ix within the copied rows
          (local.set $k (i32x4.add
            (i32x4.mul (i32x4.sub (local.get $iy) (local.get $y0v)) (local.get $wv))
            (local.get $ix)))
          (local.set $k0 (i32.add (local.get $src) (i32x4.extract_lane 0 (local.get $k))))
          (local.set $k1 (i32.add (local.get $src) (i32x4.extract_lane 1 (local.get $k))))
          (local.set $d1 (f64x2.replace_lane 1
            (f64x2.splat (f64.convert_i32_u (i32.load8_u (local.get $k0))))
            (f64.convert_i32_u (i32.load8_u (local.get $k1)))))
          (local.set $d2 (f64x2.replace_lane 1
            (f64x2.splat (f64.convert_i32_u (i32.load8_u offset=1 (local.get $k0))))
            (f64.convert_i32_u (i32.load8_u offset=1 (local.get $k1)))))
          (local.set $d3 (f64x2.replace_lane 1
            (f64x2.splat (f64.convert_i32_u (i32.load8_u (i32.add (local.get $k0) (local.get $w)))))
            (f64.convert_i32_u (i32.load8_u (i32.add (local.get $k1) (local.get $w))))))
          (local.set $d4 (f64x2.replace_lane 1
            (f64x2.splat (f64.convert_i32_u (i32.load8_u offset=1 (i32.add (local.get $k0) (local.get $w)))))
            (f64.convert_i32_u (i32.load8_u offset=1 (i32.add (local.get $k1) (local.get $w))))))
          ;; (d1 (1 - fx) + d2 fx) (1 - fy) + (d3 (1 - fx) + d4 fx) fy
          (local.set $gx (f64x2.sub (local.get $one) (local.get $fx)))
          (local.set $t (f64x2.add
            (f64x2.mul
              (f64x2.add (f64x2.mul (local.get $d1) (local.get $gx)) (f64x2.mul (local.get $d2) (local.get $fx)))
              (f64x2.sub (local.get $one) (local.get $fy)))
            (f64x2.mul
              (f64x2.add (f64x2.mul (local.get $d3) (local.get $gx)) (f64x2.mul (local.get $d4) (local.get $fx)))
              (local.get $fy))))
          (local.set $s (f64.add (f64.add (local.get $s) (f64x2.extract_lane 0 (local.get $t)))
            (f64x2.extract_lane 1 (local.get $t))))
          (local.set $j (i32.add (local.get $j) (i32.const 1)))
          (br_if $subrows (i32.lt_u (local.get $j) (i32.const 2))))
        (f32.store
          (i32.add (local.get $out) (i32.shl (i32.add (i32.shl (local.get $r) (i32.const 7)) (local.get $c)) (i32.const 2)))
          (f32.demote_f64 (f64.div (local.get $s) (f64.const 4))))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br_if $inner (i32.lt_u (local.get $b) (i32.const 128))))
      (local.set $a (i32.add (local.get $a) (i32.const 1)))
      (br_if $outer (i32.lt_u (local.get $a) (i32.const 128)))))

  ;; The work image's foreground (hand-geometry.ts): mask byte 1 where src > t (0 <= t <= 255),
  ;; else 0; dist (16-bit) `inf` there, else 0; returns the count. n bytes of src; src has 16
  ;; readable bytes after its end. Exact: a comparison per pixel, in any order.
  (func (export "foreground")
    (param $src i32) (param $n i32) (param $t i32) (param $inf i32) (param $mask i32) (param $dist i32)
    (result i32)
    (local $i i32) (local $end i32) (local $m v128) (local $acc v128) (local $tv v128) (local $infv v128)
    (local $one v128) (local $count i32)
    (local.set $tv (i8x16.splat (local.get $t)))
    (local.set $infv (i16x8.splat (local.get $inf)))
    (local.set $one (i8x16.splat (i32.const 1)))
    (local.set $end (i32.and (local.get $n) (i32.const -16)))
    (local.set $i (i32.const 0))
    (block $done
      (loop $vectors
        (br_if $done (i32.ge_u (local.get $i) (local.get $end)))
        ;; all ones where src > t
        (local.set $m (i8x16.gt_u (v128.load (i32.add (local.get $src) (local.get $i))) (local.get $tv)))
        (v128.store (i32.add (local.get $mask) (local.get $i)) (v128.and (local.get $m) (local.get $one)))
        (v128.store offset=0 (i32.add (local.get $dist) (i32.shl (local.get $i) (i32.const 1)))
          (v128.and (i16x8.extend_low_i8x16_s (local.get $m)) (local.get $infv)))
        (v128.store offset=16 (i32.add (local.get $dist) (i32.shl (local.get $i) (i32.const 1)))
          (v128.and (i16x8.extend_high_i8x16_s (local.get $m)) (local.get $infv)))
        ;; each lane -1 or 0, summed pairwise into 32-bit lanes
        (local.set $acc (i32x4.add (local.get $acc)
          (i32x4.extadd_pairwise_i16x8_s (i16x8.extadd_pairwise_i8x16_s (local.get $m)))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $vectors)))
    (local.set $count (i32.sub (i32.const 0)
      (i32.add
        (i32.add (i32x4.extract_lane 0 (local.get $acc)) (i32x4.extract_lane 1 (local.get $acc)))
        (i32.add (i32x4.extract_lane 2 (local.get $acc)) (i32x4.extract_lane 3 (local.get $acc))))))
    ;; the last n mod 16 pixels one by one
    (block $tailDone
      (loop $tail
        (br_if $tailDone (i32.ge_u (local.get $i) (local.get $n)))
        (if (i32.gt_u (i32.load8_u (i32.add (local.get $src) (local.get $i))) (local.get $t))
          (then
            (i32.store8 (i32.add (local.get $mask) (local.get $i)) (i32.const 1))
            (i32.store16 (i32.add (local.get $dist) (i32.shl (local.get $i) (i32.const 1))) (local.get $inf))
            (local.set $count (i32.add (local.get $count) (i32.const 1))))
          (else
            (i32.store8 (i32.add (local.get $mask) (local.get $i)) (i32.const 0))
            (i32.store16 (i32.add (local.get $dist) (i32.shl (local.get $i) (i32.const 1))) (i32.const 0))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $tail)))
    (local.get $count))

  ;; The mask alone: byte 1 where src > t (0 <= t <= 255), else 0; n bytes, src and mask with 16
  ;; bytes of room after their ends (the last vector runs past n into ignored bytes).
  (func (export "above") (param $src i32) (param $n i32) (param $t i32) (param $mask i32)
    (local $i i32) (local $tv v128) (local $one v128)
    (local.set $tv (i8x16.splat (local.get $t)))
    (local.set $one (i8x16.splat (i32.const 1)))
    (local.set $i (i32.const 0))
    (block $done
      (loop $vectors
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (v128.store (i32.add (local.get $mask) (local.get $i))
          (v128.and (i8x16.gt_u (v128.load (i32.add (local.get $src) (local.get $i))) (local.get $tv))
            (local.get $one)))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $vectors))))

  ;; The hand's grey-level sums behind measureFrame's hand mean, saturation and edge fall-off
  ;; (capture-checks.ts), 16 work pixels a step: over the pixels whose mask byte is non-zero, the
  ;; sum of the grey levels, their count, the count at >= 250, and the sum and count in the edge
  ;; band (eLo <= distance <= eHi) and, outside it, in the inner band (iLo <= distance <= iHi).
  ;; Integer sums (exact in any order). work and mask: n bytes, dist: n u16; each with 16 readable
  ;; bytes after its end (32 for dist), and the mask's 16 bytes after n zero. out: 7 i32.
  (func (export "handSums")
    (param $work i32) (param $mask i32) (param $dist i32) (param $n i32)
    (param $eLo i32) (param $eHi i32) (param $iLo i32) (param $iHi i32) (param $out i32)
    (local $i i32) (local $v v128) (local $mk v128) (local $e v128) (local $in v128) (local $d0 v128)
    (local $d1 v128) (local $sum v128) (local $count v128) (local $sat v128) (local $edge v128)
    (local $edgeN v128) (local $inner v128) (local $innerN v128)
    (local $eLoV v128) (local $eHiV v128) (local $iLoV v128) (local $iHiV v128) (local $satV v128)
    (local.set $eLoV (i16x8.splat (local.get $eLo)))
    (local.set $eHiV (i16x8.splat (local.get $eHi)))
    (local.set $iLoV (i16x8.splat (local.get $iLo)))
    (local.set $iHiV (i16x8.splat (local.get $iHi)))
    (local.set $satV (i8x16.splat (i32.const 250)))
    (local.set $i (i32.const 0))
    (block $done
      (loop $vectors
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $v (v128.load (i32.add (local.get $work) (local.get $i))))
        ;; all ones on the hand
        (local.set $mk (v128.not (i8x16.eq (v128.load (i32.add (local.get $mask) (local.get $i)))
          (v128.const i64x2 0 0))))
        (local.set $d0 (v128.load offset=0 (i32.add (local.get $dist) (i32.shl (local.get $i) (i32.const 1)))))
        (local.set $d1 (v128.load offset=16 (i32.add (local.get $dist) (i32.shl (local.get $i) (i32.const 1)))))
        ;; the bands, per 16-bit distance, narrowed to one byte a pixel (all ones or zero)
        (local.set $e (v128.and (local.get $mk) (i8x16.narrow_i16x8_s
          (v128.and (i16x8.ge_u (local.get $d0) (local.get $eLoV)) (i16x8.le_u (local.get $d0) (local.get $eHiV)))
          (v128.and (i16x8.ge_u (local.get $d1) (local.get $eLoV)) (i16x8.le_u (local.get $d1) (local.get $eHiV))))))
        (local.set $in (v128.andnot (v128.and (local.get $mk) (i8x16.narrow_i16x8_s
          (v128.and (i16x8.ge_u (local.get $d0) (local.get $iLoV)) (i16x8.le_u (local.get $d0) (local.get $iHiV)))
          (v128.and (i16x8.ge_u (local.get $d1) (local.get $iLoV)) (i16x8.le_u (local.get $d1) (local.get $iHiV)))))
          (local.get $e)))
        ;; grey sums: the selected bytes added pairwise into 32-bit lanes; counts: -1 lanes
        (local.set $sum (i32x4.add (local.get $sum) (i32x4.extadd_pairwise_i16x8_u
          (i16x8.extadd_pairwise_i8x16_u (v128.and (local.get $v) (local.get $mk))))))
        (local.set $count (i32x4.sub (local.get $count) (i32x4.extadd_pairwise_i16x8_s
          (i16x8.extadd_pairwise_i8x16_s (local.get $mk)))))
        (local.set $sat (i32x4.sub (local.get $sat) (i32x4.extadd_pairwise_i16x8_s
          (i16x8.extadd_pairwise_i8x16_s (v128.and (local.get $mk) (i8x16.ge_u (local.get $v) (local.get $satV)))))))
        (local.set $edge (i32x4.add (local.get $edge) (i32x4.extadd_pairwise_i16x8_u
          (i16x8.extadd_pairwise_i8x16_u (v128.and (local.get $v) (local.get $e))))))
        (local.set $edgeN (i32x4.sub (local.get $edgeN) (i32x4.extadd_pairwise_i16x8_s
          (i16x8.extadd_pairwise_i8x16_s (local.get $e)))))
        (local.set $inner (i32x4.add (local.get $inner) (i32x4.extadd_pairwise_i16x8_u
          (i16x8.extadd_pairwise_i8x16_u (v128.and (local.get $v) (local.get $in))))))
        (local.set $innerN (i32x4.sub (local.get $innerN) (i32x4.extadd_pairwise_i16x8_s
          (i16x8.extadd_pairwise_i8x16_s (local.get $in)))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $vectors)))
    (v128.store offset=0 (local.get $out) (local.get $sum))
    (v128.store offset=16 (local.get $out) (local.get $count))
    (v128.store offset=32 (local.get $out) (local.get $sat))
    (v128.store offset=48 (local.get $out) (local.get $edge))
    (v128.store offset=64 (local.get $out) (local.get $edgeN))
    (v128.store offset=80 (local.get $out) (local.get $inner))
    (v128.store offset=96 (local.get $out) (local.get $innerN)))
)
