module lws.local/devcluster/probe

go 1.26.0
