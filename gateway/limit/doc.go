// Package limit holds porthole's rate limits as mechanisms that know
// nothing of HTTP: the token buckets that charge a call its tool's cost
// ([Buckets]), and the bounded limiter of failed authentications per client
// address ([Failures]). Both take the time from a clock the tests can set.
//
// # Trust model
//
// The keys are a principal name, which authentication has already admitted
// and which comes from the operator's tokens file, and a client address,
// which the gateway resolved from the connection (or from a trusted proxy's
// header). Neither is taken from the request body. Principals are few, so
// their buckets live as long as the process; addresses are not, so
// [Failures] remembers at most a fixed number of them, dropping the least
// recently seen.
//
// [Limits.Check] refuses limits that would not limit (a rate that is not a
// finite positive number, a burst below one) when the gateway is built,
// never per request.
//
// What to answer a refused call (429 with Retry-After, a denial record, a
// metric) is the gateway's middleware; this package only decides. A limiter
// shared by replicas (Redis) will live beside these, in a package of its
// own under gateway/limit, behind the same decisions.
package limit
