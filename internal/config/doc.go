// Package config is syncjob's settings: the table of every setting (its
// environment variable, flag, default and help), how a command binds the
// groups it reads to flags, and Validate, which names the setting that is
// wrong. README's settings table is generated from the same table.
package config
