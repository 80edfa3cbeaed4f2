{
  "targets": [
    {
      "target_name": "npyts_native",
      "sources": ["src/npyts_native.c", "src/external_buffer.cc"],
      "cflags": ["-O3", "-Wall", "-Wextra", "-pthread"],
      "cflags_c": ["-std=c11"],
      "cflags_cc": ["-std=c++17"],
      "libraries": ["-pthread"],
      "conditions": [
        ["<!(node -p \"require('fs').existsSync('/usr/include/libdeflate.h') ? 1 : 0\")==1", {
          "defines": ["NPYTS_LIBDEFLATE"],
          "libraries": ["-ldeflate"]
        }]
      ]
    }
  ]
}
