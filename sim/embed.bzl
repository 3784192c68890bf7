"""Embeds a text file (a catalog) into a C++ library as `extern const char SYMBOL[]`."""

def embed_text(name, src, symbol, visibility = None):
    native.genrule(
        name = name + "_gen",
        srcs = [src],
        outs = [name + ".cc"],
        cmd = ("(echo 'extern const char %s[];'; echo 'const char %s[] = R\"PARASIM_EMBED(';" +
               " cat $<; echo ')PARASIM_EMBED\";') > $@") % (symbol, symbol),
    )
    native.cc_library(
        name = name,
        srcs = [name + ".cc"],
        visibility = visibility,
    )
