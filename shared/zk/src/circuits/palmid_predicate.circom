pragma circom 2.1.6;

// palmid predicate proof, version 1.
//
// Statement (public): "`commitment` = Poseidon(attrTag, value, salt) for a value that satisfies the
// predicate (kind 0: value <= bound, kind 1: value is one of set[]), and this proof is for the context
// `binding`". The service signs the statement and the commitment with its published key outside the
// circuit (shared/src/zk/prove.ts); the circuit keeps the value and the salt hidden.
// A fresh salt per proof makes commitments unlinkable between proofs about the same user.
//
// Encodings are fixed by shared/src/zk/encoding.ts: dates are YYYYMMDD integers (so "born on or before
// the cutoff" is an integer comparison and the calendar stays outside the circuit), strings and the
// auth id are 248-bit prefixes of domain-separated SHA-256 digests.

include "circomlib/circuits/poseidon.circom";
include "circomlib/circuits/comparators.circom";
include "circomlib/circuits/bitify.circom";

// YYYYMMDD <= 99991231 < 2^27.
function DATE_BITS() { return 27; }

template PalmidPredicate(SET) {
    signal output commitment;

    signal input binding;
    signal input attrTag;
    signal input kind;
    signal input bound;
    signal input set[SET];

    signal input value;
    signal input salt;

    kind * (kind - 1) === 0;

    component h = Poseidon(3);
    h.inputs[0] <== attrTag;
    h.inputs[1] <== value;
    h.inputs[2] <== salt;
    commitment <== h.out;

    // kind 0: value <= bound. The value is masked by (1 - kind) so that kind-1 values (digests) need
    // not fit the date range; both operands are range-checked as LessEqThan requires.
    signal ordered <== (1 - kind) * value;
    component orderedBits = Num2Bits(DATE_BITS());
    orderedBits.in <== ordered;
    component boundBits = Num2Bits(DATE_BITS());
    boundBits.in <== bound;
    component le = LessEqThan(DATE_BITS());
    le.in[0] <== ordered;
    le.in[1] <== bound;
    (1 - kind) * (1 - le.out) === 0;

    // kind 1: value is a root of prod(value - set[i]).
    signal acc[SET + 1];
    acc[0] <== 1;
    for (var i = 0; i < SET; i++) {
        acc[i + 1] <== acc[i] * (value - set[i]);
    }
    kind * acc[SET] === 0;

    // Tie the context binding into a constraint (belt and braces: snarkjs also adds one per public
    // input) so it cannot be changed without invalidating the proof.
    signal bindingSquared <== binding * binding;
}

component main {public [binding, attrTag, kind, bound, set]} = PalmidPredicate(8);
