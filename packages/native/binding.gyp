{
  "targets": [
    {
      "target_name": "npyts_native",
      "sources": ["src/npyts_native.c", "src/external_buffer.cc"],
      "cflags": ["-O3", "-Wall", "-Wextra", "-pthread"],
      "cflags_c": ["-std=c11"],
      "cflags_cc": ["-std=c++17"],
      "libraries": ["-pthread", "-ldl"],
      "conditions": [
        ["<!(node libdeflate.cjs found)==1", {
          "defines": ["NPYTS_LIBDEFLATE"],
          "libraries": ["<!(node libdeflate.cjs libraries)"]
        }]
      ]
    }
  ]
}
