{
  "targets": [
    {
      "target_name": "npyts_native",
      "sources": ["src/npyts_native.c"],
      "cflags": ["-O3", "-std=c11", "-Wall", "-Wextra", "-pthread"],
      "libraries": ["-pthread"]
    }
  ]
}
