// Package report is what syncjob prints: a run's report (its headline, the
// plan as a table, the JSON), status, aligned tables that escape what a
// terminal would obey, colours, the progress line and the process logger.
// Everything it prints of a run has its secrets masked first.
package report
