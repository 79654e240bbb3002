// Package product is the product's name, from which the environment variables,
// cookie, Redis prefix, metric namespace and SQLite file derive (docs/fork.md).
package product

// Name is the product's name: a lower-case letter, then letters, digits or underscores.
const Name = "brain"

// EnvPrefix begins every environment variable the platform reads.
const EnvPrefix = "BRAIN_"

// MetricNamespace begins every Prometheus metric name: brain_… .
const MetricNamespace = Name

// SessionCookie is the name of the session cookie.
const SessionCookie = Name + "_session"

// RedisPrefix is the default prefix of the Redis keys.
const RedisPrefix = Name + ":"

// DatabaseFile is the SQLite database's file name in the data directory.
const DatabaseFile = Name + ".db"
