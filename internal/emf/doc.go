// Package emf writes CloudWatch Embedded Metric Format lines: one JSON object
// per log line that CloudWatch Logs turns into metrics. A Lambda function
// publishes its metrics by printing them, with no SDK and no API call, and the
// same line stays searchable in CloudWatch Logs Insights.
package emf
