// Package product is the product's name, in one place: the environment
// variables, the session cookie, the Redis key prefix, the metric
// namespace and the SQLite file all derive from Name.
// `make rename MODULE=… NAME=…` rewrites it (docs/fork.md).
package product

// Name is the product's name: lower case, a letter then letters, digits
// or underscores, so it is a metric namespace, a cookie name and, upper
// cased, an environment variable prefix as it is.
const Name = "brain"

// EnvPrefix begins every environment variable the platform reads
// (BRAIN_ADDR, …): Name upper cased, then an underscore. A feature may
// name variables of its own without it.
const EnvPrefix = "BRAIN_"

// MetricNamespace begins every Prometheus metric name: brain_… .
const MetricNamespace = Name

// SessionCookie is the name of the session cookie.
const SessionCookie = Name + "_session"

// RedisPrefix is the default prefix of the Redis keys.
const RedisPrefix = Name + ":"

// DatabaseFile is the SQLite database's file name in the data directory.
const DatabaseFile = Name + ".db"
