module mldbench/gowebhook

go 1.19
