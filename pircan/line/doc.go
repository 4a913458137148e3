// Package line is the PIRCAN/1 line codec of PIRCAN.md "Message format":
// it parses a request line `PIRCAN/1 <VERB> [<json-object>]` and formats
// reply lines `PIRCAN/1 <REPLY-VERB> <json-object>` that fit one IRC line
// (MaxReplyBytes of payload), cutting string fields on UTF-8 boundaries and
// marking the reply "truncated": true, never splitting the JSON.
//
// The package does no I/O. Every reply it formats is free of CR, LF and NUL
// whatever the request held: JSON escapes control characters inside
// strings, and everything outside strings is the codec's own text.
package line
