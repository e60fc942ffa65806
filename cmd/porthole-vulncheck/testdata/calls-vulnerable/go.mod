module porthole.invalid/calls-vulnerable

go 1.26.0

require golang.org/x/text v0.3.5
