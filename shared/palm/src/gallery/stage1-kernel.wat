;; First-stage scan of the 1:N gallery (see stage1.ts): Hamming distances between one probe
;; descriptor and every gallery descriptor, 768 bits (6 × v128) each.
;;
;; memory: [0, 96)          probe descriptor
;;         [desc, +96 n)    gallery descriptors, contiguous
;;         [out, +2 n)      u16 distances written here, one per gallery descriptor
(module
  (memory (export "memory") 1)
  (func (export "scan") (param $desc i32) (param $n i32) (param $out i32)
    (local $p0 v128) (local $p1 v128) (local $p2 v128)
    (local $p3 v128) (local $p4 v128) (local $p5 v128)
    (local $acc v128) (local $end i32)
    (if (i32.eqz (local.get $n)) (then (return)))
    (local.set $p0 (v128.load offset=0 (i32.const 0)))
    (local.set $p1 (v128.load offset=16 (i32.const 0)))
    (local.set $p2 (v128.load offset=32 (i32.const 0)))
    (local.set $p3 (v128.load offset=48 (i32.const 0)))
    (local.set $p4 (v128.load offset=64 (i32.const 0)))
    (local.set $p5 (v128.load offset=80 (i32.const 0)))
    (local.set $end (i32.add (local.get $out) (i32.shl (local.get $n) (i32.const 1))))
    (loop $scan
      ;; six byte popcounts of the XOR, summed per byte (at most 6 × 8 = 48 per lane)
      (local.set $acc (i8x16.popcnt (v128.xor (v128.load offset=0 (local.get $desc)) (local.get $p0))))
      (local.set $acc (i8x16.add (local.get $acc)
        (i8x16.popcnt (v128.xor (v128.load offset=16 (local.get $desc)) (local.get $p1)))))
      (local.set $acc (i8x16.add (local.get $acc)
        (i8x16.popcnt (v128.xor (v128.load offset=32 (local.get $desc)) (local.get $p2)))))
      (local.set $acc (i8x16.add (local.get $acc)
        (i8x16.popcnt (v128.xor (v128.load offset=48 (local.get $desc)) (local.get $p3)))))
      (local.set $acc (i8x16.add (local.get $acc)
        (i8x16.popcnt (v128.xor (v128.load offset=64 (local.get $desc)) (local.get $p4)))))
      (local.set $acc (i8x16.add (local.get $acc)
        (i8x16.popcnt (v128.xor (v128.load offset=80 (local.get $desc)) (local.get $p5)))))
      ;; widen and sum the 16 byte counts
      (local.set $acc (i32x4.extadd_pairwise_i16x8_u (i16x8.extadd_pairwise_i8x16_u (local.get $acc))))
      (i32.store16 (local.get $out)
        (i32.add
          (i32.add (i32x4.extract_lane 0 (local.get $acc)) (i32x4.extract_lane 1 (local.get $acc)))
          (i32.add (i32x4.extract_lane 2 (local.get $acc)) (i32x4.extract_lane 3 (local.get $acc)))))
      (local.set $desc (i32.add (local.get $desc) (i32.const 96)))
      (local.set $out (i32.add (local.get $out) (i32.const 2)))
      (br_if $scan (i32.lt_u (local.get $out) (local.get $end))))))
