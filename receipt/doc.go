// Package receipt holds the venue's signing key and the proofs it signs
// with it (PROTOCOL.md "Registration and auth", "Transcript, offer hash and chain hash"): the receipt, a JWT (EdDSA, `kid` in the
// header, typ receipt+jwt) that the venue signs on every ending of a
// negotiation, the JWKS that publishes the public half at
// /.well-known/jwks.json, and the hash chain of the transcript that a
// receipt commits to through its last seq and head hash.
//
// A stored key may be sealed with a key-encryption key ([Sealer]); key files
// and the store may hold retired keys beside the current one, so receipts
// signed before a rotation still verify against the JWKS.
//
// Everything but the key-file functions (keyfile.go, the one place that
// touches the file system) is pure: no I/O, no goroutines, no clock.
package receipt
