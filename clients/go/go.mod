module palisade/client

go 1.19
