package grants

// USDJSON renders cents as the shortest JSON number of dollars, the form of
// amount_usd on the wire (PROTOCOL.md "Conventions"): 350000 is 3500,
// 350050 is 3500.5, 350055 is 3500.55. Negative cents render with a minus
// sign (the venue refuses them). [ParseUSD] reads it back exactly.
func USDJSON(cents int64) []byte {
	if cents < 0 {
		return append([]byte{'-'}, usdJSON(-cents)...)
	}
	return usdJSON(cents)
}
