"use strict";
// venue.ed25519Verify(publicKey, signature, message) resolves to whether
// an Ed25519 signature verifies (all three Uint8Arrays): with WebCrypto, or,
// where the browser lacks Ed25519 there, with the vendored @noble/ed25519
// (assets/vendor/, MIT), loaded only then. venue.ed25519Fallback says which
// ran last.
venue.ed25519Fallback = false;
venue.ed25519Verify = async function (pub, sig, msg) {
  let ok = null;
  try {
    const key = await crypto.subtle.importKey("raw", pub, { name: "Ed25519" }, false, ["verify"]);
    ok = await crypto.subtle.verify({ name: "Ed25519" }, key, sig, msg);
  } catch (e) {
    ok = null; // no Ed25519 in this browser's WebCrypto
  }
  if (ok !== null) { venue.ed25519Fallback = false; return ok; }
  venue.ed25519Fallback = true;
  const ed = await import("/assets/vendor/noble-ed25519.js");
  return ed.verifyAsync(sig, msg, pub);
};
