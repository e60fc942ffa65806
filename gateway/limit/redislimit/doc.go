// Package redislimit keeps porthole's rate limits and failed-
// authentication counts in Redis, so that every replica sharing one Redis
// enforces one set of limits: a principal gets its limit, and the
// namespace the global limit, however many replicas serve them.
//
// # The algorithm
//
// Each bucket is GCRA (the generic cell rate algorithm, as
// github.com/go-redis/redis_rate uses it): one number per key, the
// theoretical arrival time of the next unit, in microseconds of the Redis
// server's clock (so the replicas' clocks do not matter). A charge is one
// Lua script that checks the principal's bucket and, for a call that
// reaches Temporal, the global bucket, and takes the cost from both or
// neither: one round trip, atomic on the server. A failed authentication is
// a charge of one against the address's count; asking whether an address
// is blocked takes nothing.
//
// # Trust model and what Redis holds
//
// Keys are PORTHOLE_REDIS_KEY_PREFIX in a hash tag ({prefix}, so that
// every key of a script is in one slot and the scripts also run on Redis
// Cluster), then the kind and a hash: "{prefix}:p:<hash>" for a principal,
// "{prefix}:g" for the global bucket, "{prefix}:f:<hash>" for a client
// address. The hash is SHA-256 of the prefix and the name, cut to 128
// bits: Redis never holds a principal name (OAuth principals are e-mail
// addresses) or an address, though anyone who can read Redis and guess a
// name can test the guess. A key expires when its bucket is full again,
// which is what an absent key means. Nothing else is stored: no token, no
// Temporal data.
//
// Anyone who can write to Redis can change the limits' state (empty a
// bucket, or fill one): it is trusted like the replicas themselves.
// Reach it over TLS (rediss://) with a password (its URL is a secret the
// redactor knows) on a network only porthole reaches.
//
// What to do when Redis does not answer (refuse, or fall back to local
// buckets) is limit.Shared's; this package only asks.
package redislimit
