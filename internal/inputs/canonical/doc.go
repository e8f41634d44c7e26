// Package canonical owns CAPTF's canonical JSON: the one byte encoding of a
// JSON value that the inputs hash (scheme h2) is computed over.
//
// The canonical form is the compact JSON text of the value with
//
//   - object members sorted by the byte order of their UTF-8 keys, no
//     duplicate keys;
//   - no insignificant whitespace;
//   - strings as UTF-8 with only '"', '\\' and the control characters
//     U+0000–U+001F escaped (\b \t \n \f \r, others as \u00XX, lowercase hex),
//     so '<', '>', '&', U+2028 and U+2029 stay literal whatever encoding the
//     rendered file used;
//   - integers only, written without sign for zero and without leading
//     zeros. A fractional or exponent number anywhere is an error naming its
//     path: the inputs hash accepts integers only (Contract changelog,
//     "Consequence of the inputs hash"), because a float that does not
//     round-trip exactly would change the hash silently.
//
// Two JSON texts that decode to the same value have the same canonical form,
// whatever their member order, whitespace or string escapes.
package canonical
