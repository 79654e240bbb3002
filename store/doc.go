// Package store holds brain's databases (SQLite embedded, PostgreSQL to scale out) and their migrations.
package store
